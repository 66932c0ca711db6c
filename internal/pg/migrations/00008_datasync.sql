-- +goose Up
-- The queues of datasync datatargets: read models of the async projector
-- "datasync" (projections/datasync.go), which turns each change of an
-- entity into one message of every datasync datatarget of its company and
-- datatype. They are not in datatarget_messages because each projector
-- owns its tables (a rebuild of one must not drop the other's rows), and
-- their messages are never events: they hold personal data in clear, which
-- the event log must not (crypto-shredding). A rebuild numbers them again
-- exactly as before, since it replays the same log in the same order.

-- The datasync datatargets as the projector knows them: settings from
-- their DatatargetCreated event, their message count, and the log
-- position of the last change they took (changes at or before it are
-- skipped, so a commit applied twice adds nothing).
CREATE TABLE datasync_targets (
    datatarget_id       text    PRIMARY KEY,
    company_id          text    NOT NULL,
    datatype            text    NOT NULL,
    fields              text[],          -- NULL: every field
    last_message_number bigint  NOT NULL DEFAULT 0,
    applied_tx          xid8    NOT NULL,
    applied_position    bigint  NOT NULL
);
CREATE INDEX datasync_targets_company ON datasync_targets (company_id, datatype);

-- The messages, as datatarget_messages, plus the entity each is about (to
-- anonymise a forgotten customer's earlier messages) and its update_id.
CREATE TABLE datasync_messages (
    datatarget_id text        NOT NULL,
    number        bigint      NOT NULL,
    company_id    text        NOT NULL,
    entity_id     text        NOT NULL,
    update_id     text        NOT NULL,
    body          json        NOT NULL,
    posted_at     timestamptz NOT NULL,
    PRIMARY KEY (datatarget_id, number)
);
CREATE INDEX datasync_messages_entity ON datasync_messages (datatarget_id, entity_id);

-- Forgetting a customer erases the raw texts of the outlet attempts that
-- carried its messages, found by message number (see
-- projections/datasync_forget.go).
CREATE INDEX outlet_log_first_message ON outlet_log (outlet_id, first_message_number);

-- +goose Down
DROP INDEX outlet_log_first_message;
DROP TABLE datasync_messages;
DROP TABLE datasync_targets;
