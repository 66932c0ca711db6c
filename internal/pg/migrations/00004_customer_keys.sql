-- +goose Up
-- Per-customer data keys, wrapped by the master key (internal/crypto).
-- Forgetting a customer deletes its row: the sealed personal data in the
-- event log can then never be opened again.
CREATE TABLE customer_keys (
    company_id  text  NOT NULL,
    customer_id text  NOT NULL,
    wrapped_key bytea NOT NULL,
    PRIMARY KEY (company_id, customer_id)
);

-- The fingerprint of the master key this database was set up with: a
-- process started with another master key refuses to run rather than
-- seal data that the others cannot open.
CREATE TABLE master_key (
    id          int   PRIMARY KEY CHECK (id = 1),
    fingerprint bytea NOT NULL
);

-- +goose Down
DROP TABLE master_key;
DROP TABLE customer_keys;
