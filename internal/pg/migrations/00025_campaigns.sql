-- +goose Up
-- campaigns is the read model of campaigns (projections/campaigns.go,
-- inline: a client reads the campaign it just created or changed at
-- once). It can be rebuilt from the log: every event of a campaign's
-- stream ("campaign-<company>-<key>") carries the campaign_key, and the
-- attributes events carry all of them.
CREATE TABLE campaigns (
    company_id           text        NOT NULL,
    campaign_key         text        NOT NULL,
    kind                 text        NOT NULL, -- email | automated-email | sms | automated-sms | EXT
    state                text        NOT NULL, -- draft | active | paused | archived
    name                 text        NOT NULL,
    utm_campaign         text        NOT NULL DEFAULT '',
    campaign_tags        jsonb       NOT NULL DEFAULT '[]', -- [{id, label}]
    folder               jsonb,                              -- {id, name}; null when in none
    marketing_permission text        NOT NULL DEFAULT '',    -- '' only for EXT without one
    -- The featured products' external_ids: the statistics tell sales of
    -- these from the others (= ANY).
    product_ids          text[]      NOT NULL DEFAULT '{}',
    created_by           text        NOT NULL,
    created_at           timestamptz NOT NULL,
    -- The first activation: the start of the statistics window.
    activated_at         timestamptz,
    updated_at           timestamptz NOT NULL,
    -- The last version of the campaign's stream applied.
    version              bigint      NOT NULL,
    PRIMARY KEY (company_id, campaign_key)
);
-- GET /api/campaigns/ lists a company's campaigns oldest first, the key
-- breaking ties, with a cursor on both.
CREATE INDEX campaigns_created ON campaigns (company_id, created_at, campaign_key);

-- +goose Down
DROP TABLE campaigns;
