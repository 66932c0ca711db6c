-- +goose Up
-- segments is the read model of segments (projections/segments, inline: a
-- client reads the segment it just created or changed at once). It can be
-- rebuilt from the log: every event of a segment's stream
-- ("segment-<company>-<key>") carries the segment_key, and the change
-- events carry name, description and rule whole.
CREATE TABLE segments (
    company_id  text        NOT NULL,
    segment_key text        NOT NULL,
    name        text        NOT NULL,
    description text        NOT NULL DEFAULT '',
    rule        jsonb       NOT NULL,
    -- The rule as given, compacted, with its keys in the client's order
    -- (jsonb would sort them): what the answers show.
    rule_text   text        NOT NULL,
    state       text        NOT NULL, -- active | archived
    created_by  text        NOT NULL,
    created_at  timestamptz NOT NULL,
    updated_at  timestamptz NOT NULL,
    -- The last version of the segment's stream applied.
    version     bigint      NOT NULL,
    PRIMARY KEY (company_id, segment_key)
);
-- GET /api/segments/ lists a company's segments oldest first.
CREATE INDEX segments_created ON segments (company_id, created_at, segment_key);

-- +goose Down
DROP TABLE segments;
