-- Scratch data for docs/benchmarks.md, "Customer search by identifier at 1M":
-- the customers table as migrations 00006 and 00016 leave it, 1,010,000 rows.
-- psql -h $D -p 55430 -U postgres -d scratch -f readmodels/testdata/customers_identifier_1m.sql
\timing on
CREATE TABLE customers (
    company_id   text        NOT NULL,
    customer_id  text        NOT NULL,
    doc          jsonb       NOT NULL,
    is_deleted   boolean     NOT NULL DEFAULT false,
    is_forgotten boolean     NOT NULL DEFAULT false,
    version      bigint      NOT NULL,
    created_at   timestamptz NOT NULL,
    updated_at   timestamptz NOT NULL,
    PRIMARY KEY (company_id, customer_id)
);
-- 1,000,000 customers in one company (UUIDv7-shaped ids in creation order),
-- 1% deleted, 0.5% forgotten (a doc holding only id and the flags), every
-- 3rd without a phone number; plus 10,000 in another company.
INSERT INTO customers
SELECT c.company, c.id,
       CASE WHEN i % 200 = 7 THEN jsonb_build_object('id', c.id, 'is_deleted', false, 'is_forgotten', true)
       ELSE jsonb_strip_nulls(jsonb_build_object(
         'id', c.id, 'external_id', 'ext-' || i, 'email', 'person' || i || '@example.com',
         'phone_number', CASE WHEN i % 3 = 0 THEN NULL ELSE '+3161' || lpad(i::text, 7, '0') END,
         'customer_token', 'ct_' || md5('t' || c.company || i),
         'first_name', 'First' || (i % 997), 'last_name', 'Last' || (i % 1009),
         'can_email', i % 2 = 0, 'can_post', false, 'can_profile', false, 'can_push', false, 'can_sms', i % 5 = 0,
         'city', 'City' || (i % 300), 'country', 'NL', 'language', 'nl',
         'date_joined', '2024-01-01T00:00:00Z', 'tags', jsonb_build_array('t' || (i % 10)), 'mailing_lists', '[]'::jsonb,
         'is_deleted', i % 100 = 3, 'is_forgotten', false)) END,
       i % 100 = 3, i % 200 = 7, 1, now(), now()
FROM (SELECT i, co AS company,
             lpad(to_hex(1700000000000 + i), 12, '0') || '-7' || substr(md5(co || i), 1, 3) || '-8' || substr(md5(co || i), 4, 3) || '-' || substr(md5(co || i), 7, 12) AS id
      FROM (SELECT 'company-big' AS co, g AS i FROM generate_series(1, 1000000) g
            UNION ALL SELECT 'company-small', g FROM generate_series(1, 10000) g) s) c(i, company, id);
VACUUM ANALYZE customers;
SELECT count(*), pg_size_pretty(pg_total_relation_size('customers')) FROM customers;
-- Migration 00030's indexes (run after measuring the containment form, or not: it does not use them).
CREATE INDEX CONCURRENTLY customers_email ON customers (company_id, (doc ->> 'email'), customer_id)
    WHERE NOT is_deleted AND doc ->> 'email' IS NOT NULL;
CREATE INDEX CONCURRENTLY customers_phone_number ON customers (company_id, (doc ->> 'phone_number'), customer_id)
    WHERE NOT is_deleted AND doc ->> 'phone_number' IS NOT NULL;
CREATE INDEX CONCURRENTLY customers_external_id ON customers (company_id, (doc ->> 'external_id'), customer_id)
    WHERE NOT is_deleted AND doc ->> 'external_id' IS NOT NULL;
CREATE INDEX CONCURRENTLY customers_customer_token ON customers (company_id, (doc ->> 'customer_token'), customer_id)
    WHERE NOT is_deleted AND doc ->> 'customer_token' IS NOT NULL;
ANALYZE customers;
