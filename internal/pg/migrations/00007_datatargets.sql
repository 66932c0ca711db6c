-- +goose Up
-- Datatargets, their outlets and their message queues: read models kept
-- by the inline projector "datatargets" (projections/datatargets.go) in the
-- append transaction, so a client reads its own posts at once. They can be
-- rebuilt from the log: a message's number is its version in the
-- datatarget's messages stream, so a replay numbers every message again
-- exactly as before.

CREATE TABLE datatargets (
    company_id          text        NOT NULL,
    id                  text        NOT NULL,
    datatarget_type     text        NOT NULL, -- messages | datasync
    name                text        NOT NULL,
    description         text        NOT NULL DEFAULT '',
    enabled             boolean     NOT NULL,
    -- datasync settings (datatype, fields, from_start); {} for messages.
    settings            jsonb       NOT NULL DEFAULT '{}',
    created_by          text        NOT NULL,
    created_at          timestamptz NOT NULL,
    updated_at          timestamptz NOT NULL,
    last_message_number bigint      NOT NULL DEFAULT 0,
    PRIMARY KEY (company_id, id)
);

-- request is json, not jsonb: the content template keeps its key order.
CREATE TABLE datatarget_outlets (
    company_id              text        NOT NULL,
    id                      text        NOT NULL,
    datatarget_id           text        NOT NULL,
    outlet_type             text        NOT NULL,
    request                 json        NOT NULL,
    is_batched              boolean     NOT NULL,
    max_batch_size          integer     NOT NULL,
    min_request_interval_ms bigint      NOT NULL DEFAULT 0,
    secret                  text        NOT NULL DEFAULT '',
    enabled                 boolean     NOT NULL,
    disabled_reason         text        NOT NULL DEFAULT '',
    created_by              text        NOT NULL,
    created_at              timestamptz NOT NULL,
    updated_at              timestamptz NOT NULL,
    PRIMARY KEY (company_id, id)
);
CREATE INDEX datatarget_outlets_datatarget ON datatarget_outlets (company_id, datatarget_id);

-- The queues. Identifiers are unique across companies, so the key leads
-- with the datatarget: retrieval and delivery read ranges of one queue.
-- body is json, not jsonb: it is stored and served as text, never
-- queried inside.
CREATE TABLE datatarget_messages (
    datatarget_id text        NOT NULL,
    number        bigint      NOT NULL,
    company_id    text        NOT NULL,
    body          json        NOT NULL,
    posted_at     timestamptz NOT NULL,
    PRIMARY KEY (datatarget_id, number)
);

-- Delivery state of each outlet, written by the delivery workers
-- (internal/delivery), not by a projector: a rebuild never touches it.
-- The row is also the outlet's lease: one worker at a time, across every
-- serve process on the database, holds it (lease_holder, renewed before
-- lease_expires_at), and every write of a worker checks that it still does.
CREATE TABLE outlet_deliveries (
    outlet_id                     text        PRIMARY KEY,
    company_id                    text        NOT NULL,
    datatarget_id                 text        NOT NULL,
    lease_holder                  text        NOT NULL DEFAULT '',
    lease_expires_at              timestamptz NOT NULL DEFAULT '-infinity',
    last_delivered_message_number bigint      NOT NULL DEFAULT 0,
    delivered_batch_count         bigint      NOT NULL DEFAULT 0,
    entry_count                   bigint      NOT NULL DEFAULT 0,
    -- The batch being retried: its first message is
    -- last_delivered_message_number + 1; 0 when no attempt failed.
    pending_size                  integer     NOT NULL DEFAULT 0,
    failed_attempts               integer     NOT NULL DEFAULT 0,
    next_attempt_at               timestamptz NOT NULL DEFAULT '-infinity',
    last_attempt_at               timestamptz NOT NULL DEFAULT '-infinity'
);

-- Every delivery attempt. The raw request and reply are kept for the
-- single-entry view only (TOAST-compressed).
CREATE TABLE outlet_log (
    outlet_id              text        NOT NULL,
    entry_number           bigint      NOT NULL,
    company_id             text        NOT NULL,
    date                   timestamptz NOT NULL,
    batch_number           bigint      NOT NULL,
    batch_size             integer     NOT NULL,
    first_message_number   bigint,
    after_update           text,
    status                 text        NOT NULL,
    http_status            integer     NOT NULL DEFAULT 0,
    request_time_ms        bigint      NOT NULL,
    fail_reason            text        NOT NULL DEFAULT '',
    http_request_available boolean     NOT NULL,
    http_request           text        NOT NULL DEFAULT '',
    http_reply             text        NOT NULL DEFAULT '',
    PRIMARY KEY (outlet_id, entry_number)
);

-- +goose Down
DROP TABLE outlet_log;
DROP TABLE outlet_deliveries;
DROP TABLE datatarget_messages;
DROP TABLE datatarget_outlets;
DROP TABLE datatargets;
