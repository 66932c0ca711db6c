-- +goose Up
-- Shops: the write side's registry and the read model.
--
-- shop_states is the write side (commands/import_shops.go): which shop an
-- external_id names, and its stream version. The import worker changes it
-- in the chunk's transaction, with the chunk's events.
CREATE TABLE shop_states (
    company_id  text   NOT NULL,
    external_id text   NOT NULL,
    shop_id     text   NOT NULL,
    version     bigint NOT NULL,
    PRIMARY KEY (company_id, external_id)
);

-- shops is the read model kept by the async projector "shops"
-- (projections/shops.go) and read by GET /api/data/shops/. Disposable: a
-- rebuild replays the log into a copy, so no foreign keys or serials. doc
-- is the shop exactly as retrieval answers it.
CREATE TABLE shops (
    company_id text        NOT NULL,
    -- UUIDv7: retrieval pages in creation order by the primary key.
    shop_id    text        NOT NULL,
    doc        jsonb       NOT NULL,
    version    bigint      NOT NULL,
    created_at timestamptz NOT NULL,
    updated_at timestamptz NOT NULL,
    PRIMARY KEY (company_id, shop_id)
);
-- Equality filters are containment (doc @> ...), which jsonb_path_ops indexes.
CREATE INDEX shops_doc ON shops USING gin (doc jsonb_path_ops);

-- +goose Down
DROP TABLE shops;
DROP TABLE shop_states;
