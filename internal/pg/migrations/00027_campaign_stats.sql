-- +goose Up
-- The statistics of campaigns (projections/campaign_stats.go, async;
-- docs/campaigns.md, Statistics). They are kept incrementally: each
-- customer's part of a campaign's figures (campaign_stats_members, with
-- the conversions of campaign_stats_conversions) is decided again from
-- what the projection stores whenever an event touches it, and what it
-- changes is added to the campaign's totals (campaign_stats,
-- campaign_stats_products), so that a read is a few rows per campaign.
-- Nothing here is personal: customers are named by their internal id.

-- One row per campaign key seen in a campaign's stream or in activity
-- (activity may come before its campaign): the window and the totals.
CREATE TABLE campaign_stats (
    company_id           text        NOT NULL,
    campaign_key         text        NOT NULL,
    -- The first activation as the campaign's stream gives it (null:
    -- never activated, or the campaign not created yet).
    activated_at         timestamptz,
    audience_size        bigint      NOT NULL DEFAULT 0,
    audience_unreachable bigint      NOT NULL DEFAULT 0,
    audience_with_events bigint      NOT NULL DEFAULT 0,
    audience_with_sales  bigint      NOT NULL DEFAULT 0,
    -- The events list: sent, delivered, opens, clicks, unsubscribes,
    -- spam_reports, bounces.
    events               bigint[]    NOT NULL DEFAULT '{0,0,0,0,0,0,0}',
    total_sales          bigint      NOT NULL DEFAULT 0,
    total_revenue        bigint      NOT NULL DEFAULT 0,
    -- Hundredths of units (quantities have two decimals).
    total_units          bigint      NOT NULL DEFAULT 0,
    -- When a figure last changed: the time of the commit that changed it.
    modified_at          timestamptz NOT NULL,
    PRIMARY KEY (company_id, campaign_key)
);

-- The campaign activity events (with a campaign_key), so that a deleted
-- one can be taken back out, and a customer's part decided from them.
CREATE TABLE campaign_stats_events (
    company_id   text        NOT NULL,
    event_id     bigint      NOT NULL,
    campaign_key text        NOT NULL,
    customer_id  text        NOT NULL,
    figure       smallint    NOT NULL, -- campaign.Figure
    date         timestamptz NOT NULL,
    PRIMARY KEY (company_id, event_id)
);
CREATE INDEX campaign_stats_events_member ON campaign_stats_events (company_id, campaign_key, customer_id);

-- Each customer's part of a campaign's audience figures.
CREATE TABLE campaign_stats_members (
    company_id     text        NOT NULL,
    campaign_key   text        NOT NULL,
    customer_id    text        NOT NULL,
    counts         bigint[]    NOT NULL, -- per campaign.Figure
    first_reaction timestamptz,
    window_sales   boolean     NOT NULL,
    PRIMARY KEY (company_id, campaign_key, customer_id)
);
-- A sale's change finds the campaigns of its customer.
CREATE INDEX campaign_stats_members_customer ON campaign_stats_members (company_id, customer_id);

-- What the statistics need of each sale, folded from SaleUpserted as the
-- sales read model folds it (no personal field).
CREATE TABLE campaign_stats_sales (
    company_id  text        NOT NULL,
    sale_id     text        NOT NULL,
    customer_id text        NOT NULL,
    doc         jsonb       NOT NULL, -- the transaction fields the figures read
    keyed_rows  jsonb       NOT NULL, -- the rows with their keys, deleted ones too
    total_given boolean     NOT NULL,
    version     bigint      NOT NULL,
    -- What the figures read, derived from the above at each change.
    counted     boolean     NOT NULL,
    sale_date   timestamptz,
    revenue     bigint      NOT NULL,
    stat_rows   jsonb       NOT NULL, -- [campaign.SaleRow]
    PRIMARY KEY (company_id, sale_id)
);
CREATE INDEX campaign_stats_sales_customer ON campaign_stats_sales (company_id, customer_id);

-- The conversions: a sale's contribution to a campaign's sales figures.
CREATE TABLE campaign_stats_conversions (
    company_id   text        NOT NULL,
    campaign_key text        NOT NULL,
    customer_id  text        NOT NULL,
    sale_id      text        NOT NULL,
    sale_date    timestamptz NOT NULL,
    revenue      bigint      NOT NULL,
    units        bigint      NOT NULL,
    products     jsonb       NOT NULL, -- {product_id: {external_id, units, revenue, discount}}
    PRIMARY KEY (company_id, campaign_key, customer_id, sale_id)
);
-- The sales date_range: the first and last conversion.
CREATE INDEX campaign_stats_conversions_date ON campaign_stats_conversions (company_id, campaign_key, sale_date);

-- The conversions' rows by product: campaign products against the
-- others, and the categories, are read from these with the campaign's
-- product_ids and the products' categories as they are now.
CREATE TABLE campaign_stats_products (
    company_id   text   NOT NULL,
    campaign_key text   NOT NULL,
    product_id   text   NOT NULL,
    external_id  text   NOT NULL,
    units        bigint NOT NULL, -- hundredths
    revenue      bigint NOT NULL,
    discount     bigint NOT NULL,
    PRIMARY KEY (company_id, campaign_key, product_id)
);

-- GET /api/campaign/actions/ lists a company's campaigns by activated_at,
-- created_at for those never activated, the key breaking ties.
CREATE INDEX campaigns_activated ON campaigns (company_id, (coalesce(activated_at, created_at)), campaign_key);

-- +goose Down
DROP INDEX campaigns_activated;
DROP TABLE campaign_stats_products;
DROP TABLE campaign_stats_conversions;
DROP TABLE campaign_stats_sales;
DROP TABLE campaign_stats_members;
DROP TABLE campaign_stats_events;
DROP TABLE campaign_stats;
