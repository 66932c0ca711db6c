-- +goose Up
-- One write-side row per customer (issue 15). The identity registry,
-- customer_identities, was a second copy of what customer_states holds:
-- every registry row's key is the key its customer's state holds for the
-- kind (Book.KeyChanges and Book.Touched change both together), so the
-- state's *_hash columns with a unique index each are the registry. A
-- chunk now reads the customers its identities find with one query
-- instead of two, and a new customer costs one row (and its index
-- entries) instead of four or five. The hash covers the company, kind
-- and value, so each column is unique on its own; the indexes are partial
-- (most customers have no phone number, and a forgotten one no token).
--
-- A registry row that its customer's state does not hold would be an
-- identity the registry finds and the state cannot free: it is copied to
-- the state when the state's column is empty, and the migration refuses
-- to go on when it is not (the state holds another key of the kind), so
-- that no identity is lost without an operator seeing why.
UPDATE customer_states s SET external_id_hash = i.key_hash16
FROM customer_identities i
WHERE i.kind = 'external_id' AND i.company_id = s.company_id AND i.customer_id = s.customer_id
    AND s.external_id_hash IS NULL;
UPDATE customer_states s SET email_hash = i.key_hash16
FROM customer_identities i
WHERE i.kind = 'email' AND i.company_id = s.company_id AND i.customer_id = s.customer_id
    AND s.email_hash IS NULL;
UPDATE customer_states s SET phone_hash = i.key_hash16
FROM customer_identities i
WHERE i.kind = 'phone' AND i.company_id = s.company_id AND i.customer_id = s.customer_id
    AND s.phone_hash IS NULL;
UPDATE customer_states s SET token_hash = i.key_hash16
FROM customer_identities i
WHERE i.kind = 'customer_token' AND i.company_id = s.company_id AND i.customer_id = s.customer_id
    AND s.token_hash IS NULL;

-- +goose StatementBegin
DO $$
DECLARE
    lost bigint;
BEGIN
    SELECT count(*) INTO lost FROM customer_identities i
    WHERE NOT EXISTS (
        SELECT FROM customer_states s
        WHERE s.company_id = i.company_id AND s.customer_id = i.customer_id
            AND i.key_hash16 = CASE i.kind
                WHEN 'external_id' THEN s.external_id_hash
                WHEN 'email' THEN s.email_hash
                WHEN 'phone' THEN s.phone_hash
                ELSE s.token_hash END);
    IF lost > 0 THEN
        RAISE EXCEPTION '% identity registry rows are not held by their customer''s state; see docs/operations.md, "Migration 00031"', lost;
    END IF;
END
$$;
-- +goose StatementEnd

-- A state holding a key whose registry row names another customer, or
-- none, would be a key two customers hold, or one the registry does not
-- find: freed in the state, as the registry had it.
UPDATE customer_states s SET external_id_hash = NULL
WHERE external_id_hash IS NOT NULL AND NOT EXISTS (SELECT FROM customer_identities i
    WHERE i.key_hash16 = s.external_id_hash AND i.customer_id = s.customer_id AND i.company_id = s.company_id);
UPDATE customer_states s SET email_hash = NULL
WHERE email_hash IS NOT NULL AND NOT EXISTS (SELECT FROM customer_identities i
    WHERE i.key_hash16 = s.email_hash AND i.customer_id = s.customer_id AND i.company_id = s.company_id);
UPDATE customer_states s SET phone_hash = NULL
WHERE phone_hash IS NOT NULL AND NOT EXISTS (SELECT FROM customer_identities i
    WHERE i.key_hash16 = s.phone_hash AND i.customer_id = s.customer_id AND i.company_id = s.company_id);
UPDATE customer_states s SET token_hash = NULL
WHERE token_hash IS NOT NULL AND NOT EXISTS (SELECT FROM customer_identities i
    WHERE i.key_hash16 = s.token_hash AND i.customer_id = s.customer_id AND i.company_id = s.company_id);

CREATE UNIQUE INDEX customer_states_external_id_hash ON customer_states (external_id_hash) WHERE external_id_hash IS NOT NULL;
CREATE UNIQUE INDEX customer_states_email_hash ON customer_states (email_hash) WHERE email_hash IS NOT NULL;
CREATE UNIQUE INDEX customer_states_phone_hash ON customer_states (phone_hash) WHERE phone_hash IS NOT NULL;
CREATE UNIQUE INDEX customer_states_token_hash ON customer_states (token_hash) WHERE token_hash IS NOT NULL;
DROP TABLE customer_identities;

-- +goose Down
CREATE TABLE customer_identities (
    company_id  text  NOT NULL,
    key_hash16  bytea NOT NULL PRIMARY KEY CHECK (octet_length(key_hash16) = 16),
    kind        text  NOT NULL CHECK (kind IN ('external_id', 'email', 'phone', 'customer_token')),
    customer_id text  NOT NULL
);
INSERT INTO customer_identities (company_id, key_hash16, kind, customer_id)
SELECT company_id, external_id_hash, 'external_id', customer_id FROM customer_states WHERE external_id_hash IS NOT NULL
UNION ALL
SELECT company_id, email_hash, 'email', customer_id FROM customer_states WHERE email_hash IS NOT NULL
UNION ALL
SELECT company_id, phone_hash, 'phone', customer_id FROM customer_states WHERE phone_hash IS NOT NULL
UNION ALL
SELECT company_id, token_hash, 'customer_token', customer_id FROM customer_states WHERE token_hash IS NOT NULL;
DROP INDEX customer_states_token_hash;
DROP INDEX customer_states_phone_hash;
DROP INDEX customer_states_email_hash;
DROP INDEX customer_states_external_id_hash;
