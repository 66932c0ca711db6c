-- +goose Up
-- The write side of events and sales, and the product keys both use to
-- find the product a row or an event names.

-- product_keys finds a product by sku or ean (commands/product_link.go):
-- the external_id of the product that last declared the key, or of the
-- product an event or a sale created from it ("sku:<sku>", "ean:<ean>").
CREATE TABLE product_keys (
    company_id  text NOT NULL,
    kind        text NOT NULL CHECK (kind IN ('sku', 'ean')),
    value       text NOT NULL,
    external_id text NOT NULL,
    PRIMARY KEY (company_id, kind, value)
);

-- activity_counters hands out the integer ids of events
-- (commands/import_events.go): the last id given, per company. Ids are in
-- the events themselves, so a rebuild keeps them.
CREATE TABLE activity_counters (
    company_id text   NOT NULL PRIMARY KEY,
    last_id    bigint NOT NULL
);

-- sale_states is the write side of sales (commands/import_sales.go): which
-- sale a sale_external_id names, its stream version, its customer, and
-- what deciding later records needs (currency, rate, state, whether the
-- sale has a sale_total of its own).
CREATE TABLE sale_states (
    company_id  text    NOT NULL,
    external_id text    NOT NULL,
    sale_id     text    NOT NULL,
    customer_id text    NOT NULL,
    version     bigint  NOT NULL,
    currency    text    NOT NULL,
    rate        text    NOT NULL,
    state       text    NOT NULL,
    has_total   boolean NOT NULL,
    PRIMARY KEY (company_id, external_id)
);

-- +goose Down
DROP TABLE sale_states;
DROP TABLE activity_counters;
DROP TABLE product_keys;
