-- +goose Up
-- Products: the write side's registry and the read model.
--
-- product_states is the write side (commands/import_products.go): which
-- product an external_id names, its stream version, and the language of
-- its base record, which tells a translation (localisation method A) from
-- an update of the base.
CREATE TABLE product_states (
    company_id  text   NOT NULL,
    external_id text   NOT NULL,
    product_id  text   NOT NULL,
    version     bigint NOT NULL,
    language    text   NOT NULL DEFAULT '',
    PRIMARY KEY (company_id, external_id)
);

-- products is the read model kept by the async projector "products"
-- (projections/products.go) and read by GET /api/data/products/.
-- Disposable: a rebuild replays the log into a copy, so no foreign keys or
-- serials. doc is the product exactly as retrieval answers it: the base
-- record with its "versions" and "stock".
CREATE TABLE products (
    company_id text        NOT NULL,
    -- UUIDv7: retrieval pages in creation order by the primary key.
    product_id text        NOT NULL,
    doc        jsonb       NOT NULL,
    -- is_deleted: true products are left out of retrieval.
    is_deleted boolean     NOT NULL DEFAULT false,
    version    bigint      NOT NULL,
    created_at timestamptz NOT NULL,
    updated_at timestamptz NOT NULL,
    PRIMARY KEY (company_id, product_id)
);
-- Equality filters are containment (doc @> ...), which jsonb_path_ops indexes.
CREATE INDEX products_doc ON products USING gin (doc jsonb_path_ops);

-- +goose Down
DROP TABLE products;
DROP TABLE product_states;
