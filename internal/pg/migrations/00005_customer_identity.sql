-- +goose Up
-- Write-side state of customers (commands/import_customers.go), changed
-- in the transaction that appends the customers' events. Both tables can
-- be rebuilt from the log (docs/customers.md says how). No clear
-- identifier is stored: identities are keyed hashes
-- (crypto.Keyring.IdentifierHash), so that a forgotten customer's
-- identifiers are still recognised without being kept.

-- The identity registry: which customer an identity finds. The hash
-- covers company, kind and value, so it is unique per company on its own;
-- kind is kept for rebuilds and for reading.
CREATE TABLE customer_identities (
    company_id  text  NOT NULL,
    key_hash    bytea NOT NULL,
    kind        text  NOT NULL CHECK (kind IN ('external_id', 'email', 'phone')),
    customer_id text  NOT NULL,
    PRIMARY KEY (company_id, key_hash)
);

-- One row per customer: what the importer needs to decide. The *_hash
-- columns are the keys the customer holds in customer_identities, so that
-- a changed or moved identity frees the right row.
CREATE TABLE customer_states (
    company_id       text        NOT NULL,
    customer_id      text        NOT NULL,
    version          bigint      NOT NULL,
    deleted          boolean     NOT NULL DEFAULT false,
    forgotten        boolean     NOT NULL DEFAULT false,
    external_id_hash bytea,
    email_hash       bytea,
    phone_hash       bytea,
    created_at       timestamptz NOT NULL,
    updated_at       timestamptz NOT NULL,
    PRIMARY KEY (company_id, customer_id)
);

-- +goose Down
DROP TABLE customer_states;
DROP TABLE customer_identities;
