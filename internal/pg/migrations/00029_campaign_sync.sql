-- +goose Up
-- The queues of datasync datatargets of campaigns (datatype campaigns;
-- docs/campaigns.md, Datasync). A campaign's message holds its
-- statistics, which only the campaign_stats projection computes, so that
-- projection writes these queues, in the transaction that changes the
-- figures (projections/campaign_stats_sync.go). They are beside the
-- datasync projection's queues (datasync_targets, datasync_messages), in
-- the same shape, because each projector owns its tables: a rebuild of
-- datasync must not drop them.
--
-- Unlike the projection's other tables they are not rebuilt with it
-- (they are not in its Tables): a rebuild computes the figures a page of
-- commits at a time, not commit by commit, so it could not number the
-- messages again as they were; the queue, and outlets' progress in it,
-- stay valid across a rebuild instead. A target records the log position
-- of the last change it took and takes none at or before it, so a rebuild
-- replaying the log adds nothing that was sent.

CREATE TABLE campaign_sync_targets (
    datatarget_id       text    PRIMARY KEY,
    company_id          text    NOT NULL,
    fields              text[],          -- NULL: every field
    last_message_number bigint  NOT NULL DEFAULT 0,
    applied_tx          xid8    NOT NULL,
    applied_position    bigint  NOT NULL
);
CREATE INDEX campaign_sync_targets_company ON campaign_sync_targets (company_id);

CREATE TABLE campaign_sync_messages (
    datatarget_id text        NOT NULL,
    number        bigint      NOT NULL,
    company_id    text        NOT NULL,
    entity_id     text        NOT NULL, -- the campaign_key
    update_id     text        NOT NULL,
    body          json        NOT NULL,
    posted_at     timestamptz NOT NULL,
    PRIMARY KEY (datatarget_id, number)
);

-- +goose Down
DROP TABLE campaign_sync_messages;
DROP TABLE campaign_sync_targets;
