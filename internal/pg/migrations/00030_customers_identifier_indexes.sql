-- +goose NO TRANSACTION
-- +goose Up
-- Retrieval of customers by an identifier (GET /api/data/customers/?email=
-- and the console's customer search) is an index lookup. Without a GIN
-- index on doc (00016) such a filter read every row of the company: 2.2 s
-- p50 at 1,000,000 customers (docs/benchmarks.md, "Customer search by
-- identifier at 1M").
--
-- These four fields are always a JSON string when present (the parser
-- normalises them to text, domain/customer/parse.go), so the filter
-- doc @> '{"email": v}' is exactly doc ->> 'email' = v, which
-- readmodels.customersTable asks instead. Each index matches that query:
-- the company, the value, then customer_id, so that the matches come in
-- page order from the cursor on (an identifier can match several
-- customers: one keeps its stored field when its key moves to another)
-- and the planner picks the index before any statistics exist on the
-- expression. The predicate is retrieval's visible condition; customers
-- without the field are not indexed.
--
-- The registry (customer_identities) was not used instead: it finds the
-- key's current holder only, while retrieval shows every customer whose
-- stored field has the value.
--
-- CONCURRENTLY, so that building them on a large table does not block the
-- projector's writes (about 5 s each per million customers); it cannot
-- run in a transaction, hence NO TRANSACTION. A build that fails leaves an
-- invalid index, which IF NOT EXISTS would keep: each is dropped first, so
-- a migration run again after a failure builds them again.
DROP INDEX CONCURRENTLY IF EXISTS customers_email;
CREATE INDEX CONCURRENTLY customers_email ON customers (company_id, (doc ->> 'email'), customer_id)
    WHERE NOT is_deleted AND doc ->> 'email' IS NOT NULL;
DROP INDEX CONCURRENTLY IF EXISTS customers_phone_number;
CREATE INDEX CONCURRENTLY customers_phone_number ON customers (company_id, (doc ->> 'phone_number'), customer_id)
    WHERE NOT is_deleted AND doc ->> 'phone_number' IS NOT NULL;
DROP INDEX CONCURRENTLY IF EXISTS customers_external_id;
CREATE INDEX CONCURRENTLY customers_external_id ON customers (company_id, (doc ->> 'external_id'), customer_id)
    WHERE NOT is_deleted AND doc ->> 'external_id' IS NOT NULL;
DROP INDEX CONCURRENTLY IF EXISTS customers_customer_token;
CREATE INDEX CONCURRENTLY customers_customer_token ON customers (company_id, (doc ->> 'customer_token'), customer_id)
    WHERE NOT is_deleted AND doc ->> 'customer_token' IS NOT NULL;

-- +goose Down
DROP INDEX CONCURRENTLY IF EXISTS customers_customer_token;
DROP INDEX CONCURRENTLY IF EXISTS customers_external_id;
DROP INDEX CONCURRENTLY IF EXISTS customers_phone_number;
DROP INDEX CONCURRENTLY IF EXISTS customers_email;
