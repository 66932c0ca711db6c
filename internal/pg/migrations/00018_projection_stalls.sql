-- +goose Up
-- The companies parked for an async projector (projections/stall.go): a
-- commit the projector cannot apply, for a reason that will not pass by
-- itself, stops that projector for the commit's company alone. The
-- checkpoint moves on; the company's commits from the stalled one up to
-- the held one stay in the log and are applied, in order, once the
-- stalled one can be. Every change of a row happens with the projector's
-- checkpoint row locked.
CREATE TABLE projection_stalls (
    projector            text        NOT NULL, -- projection_checkpoints.name
    company_id           text        NOT NULL,
    -- The stalled commit, the company's first one not applied: its
    -- transaction and its first event.
    transaction_id       xid8        NOT NULL,
    global_position      bigint      NOT NULL,
    -- The last event of the company's last commit held behind it (the
    -- stalled commit's own last event until another is held).
    held_transaction_id  xid8        NOT NULL,
    held_global_position bigint      NOT NULL,
    error                text        NOT NULL,
    since                timestamptz NOT NULL DEFAULT now(),
    attempts             integer     NOT NULL DEFAULT 1,
    retry_at             timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (projector, company_id)
);

-- +goose Down
DROP TABLE projection_stalls;
