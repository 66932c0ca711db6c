-- +goose Up
-- Controlling delivery (docs/datatargets.md): an outlet's failure policy,
-- kept by the datatargets projector; {} retries a failing batch for ever.
ALTER TABLE datatarget_outlets ADD COLUMN failure_policy jsonb NOT NULL DEFAULT '{}';

-- Rewinds: the last one asked for (the outlet stream's version of its
-- event, and the message number to send again after), kept by the
-- projector; the worker holding the lease applies it to its progress and
-- records which one it applied (outlet_deliveries.rewind_applied).
ALTER TABLE datatarget_outlets
    ADD COLUMN rewind_seq   bigint NOT NULL DEFAULT 0,
    ADD COLUMN rewind_after bigint NOT NULL DEFAULT 0;

-- The delivery state learns when the batch being retried first failed
-- (for the policy's max_age_seconds), and counts the batches it parked.
ALTER TABLE outlet_deliveries
    ADD COLUMN first_failed_at timestamptz NOT NULL DEFAULT '-infinity',
    ADD COLUMN parked_total    bigint      NOT NULL DEFAULT 0,
    ADD COLUMN rewind_applied  bigint      NOT NULL DEFAULT 0;

-- Parked batches: written by the delivery worker that parks a batch
-- (under the outlet's lease, with its progress moved past the batch, in
-- one statement), marked for redelivery or deleted (discarded) by the
-- datatargets projector from the admins' events, and deleted by the
-- worker once redelivered. id counts an outlet's parked batches from 1.
CREATE TABLE outlet_parked (
    outlet_id            text        NOT NULL,
    id                   bigint      NOT NULL,
    company_id           text        NOT NULL,
    first_message_number bigint      NOT NULL,
    last_message_number  bigint      NOT NULL,
    batch_size           integer     NOT NULL,
    attempts             integer     NOT NULL,
    first_failed_at      timestamptz NOT NULL,
    parked_at            timestamptz NOT NULL,
    last_http_status     integer     NOT NULL DEFAULT 0,
    last_fail_reason     text        NOT NULL DEFAULT '',
    redeliver            boolean     NOT NULL DEFAULT false,
    PRIMARY KEY (outlet_id, id)
);

-- +goose Down
DROP TABLE outlet_parked;
ALTER TABLE outlet_deliveries DROP COLUMN first_failed_at, DROP COLUMN parked_total, DROP COLUMN rewind_applied;
ALTER TABLE datatarget_outlets DROP COLUMN failure_policy, DROP COLUMN rewind_seq, DROP COLUMN rewind_after;
