-- +goose Up
-- The customers read model, kept by the async projector "customers"
-- (projections/customers.go) and read by GET /api/data/customers/
-- (readmodels/customers.go). It is disposable: a rebuild replays the log
-- into a copy of this table, so it has no foreign keys, triggers or
-- serial columns.
--
-- doc is the customer exactly as retrieval answers it, in the interface's
-- field names plus "id". A forgotten customer's doc holds nothing personal:
-- only "id", "is_deleted" and "is_forgotten".
CREATE TABLE customers (
    company_id   text        NOT NULL,
    customer_id  text        NOT NULL,
    doc          jsonb       NOT NULL,
    is_deleted   boolean     NOT NULL DEFAULT false,
    is_forgotten boolean     NOT NULL DEFAULT false,
    -- The last stream version applied: a replayed event is skipped.
    version      bigint      NOT NULL,
    -- When the first and the last event of the customer were recorded.
    created_at   timestamptz NOT NULL,
    updated_at   timestamptz NOT NULL,
    -- Retrieval pages by customer id within a company (ids are UUIDv7,
    -- so this is creation order): the primary key is the paging index.
    PRIMARY KEY (company_id, customer_id)
);
-- Equality filters are containment (doc @> '{"field": value}');
-- jsonb_path_ops indexes exactly that operator, in a third of the size of
-- the default operator class.
CREATE INDEX customers_doc ON customers USING gin (doc jsonb_path_ops);

-- +goose Down
DROP TABLE customers;
