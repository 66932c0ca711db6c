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

-- +goose Down
DROP TABLE customer_keys;
