-- +goose Up
-- The queues of datasync datatargets of segments (datatype segment;
-- docs/segments.md, The feed). A segment's entries and exits are decided
-- by the segment_members projection (projections/segments), which writes
-- these tables in the transaction that records each entry or exit
-- (projections/segments/feed.go). They sit beside the datasync and
-- campaign_stats queues, in the same shape, and, like campaign_stats',
-- they are not rebuilt with their projection (they are not in its
-- Tables): the queue and outlets' progress in it stay valid across a
-- rebuild: a datatarget records the log position of the last commit it
-- took and takes none at or before it, and segment_sync_members keeps
-- what it was told, so that a rebuild replaying the log, and the timers
-- of the rebuilt tables, send nothing twice.

CREATE TABLE segment_sync_targets (
    datatarget_id       text    PRIMARY KEY,
    company_id          text    NOT NULL,
    segment_key         text    NOT NULL,
    fields              text[],          -- NULL: every field
    last_message_number bigint  NOT NULL DEFAULT 0,
    -- The position of the last commit of the company it took, its
    -- creation's at first: a change decided by a commit at or before it
    -- (a rebuild replays them) is not for it.
    applied_tx          xid8    NOT NULL,
    applied_position    bigint  NOT NULL,
    -- A deleted datatarget takes no more messages, and its queue goes;
    -- the row stays, so that a rebuild replaying its creation does not
    -- start it again.
    deleted             boolean NOT NULL DEFAULT false
);
CREATE INDEX segment_sync_targets_segment ON segment_sync_targets (company_id, segment_key);

-- Per datatarget and customer, the membership it was last told, and the
-- instant of that entry or exit (the members at its creation to begin
-- with). An entry or exit is sent only when it tells something new.
CREATE TABLE segment_sync_members (
    datatarget_id text        NOT NULL,
    customer_id   text        NOT NULL,
    member        boolean     NOT NULL,
    at            timestamptz NOT NULL,
    PRIMARY KEY (datatarget_id, customer_id)
);

CREATE TABLE segment_sync_messages (
    datatarget_id text        NOT NULL,
    number        bigint      NOT NULL,
    company_id    text        NOT NULL,
    entity_id     text        NOT NULL, -- the customer's id
    update_id     text        NOT NULL,
    body          json        NOT NULL,
    posted_at     timestamptz NOT NULL,
    PRIMARY KEY (datatarget_id, number)
);
-- A forgetting rewrites the customer's messages.
CREATE INDEX segment_sync_messages_entity ON segment_sync_messages (datatarget_id, entity_id);

-- +goose Down
DROP TABLE segment_sync_messages;
DROP TABLE segment_sync_members;
DROP TABLE segment_sync_targets;
