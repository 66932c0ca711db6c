-- +goose Up
-- Import runs (internal/ingest). An upload is staged as chunks of raw
-- records while the run is "receiving"; one short transaction then makes
-- it "scheduled" and publishes one Watermill message per chunk on the
-- topic "import_chunks". The import worker applies each chunk in one
-- transaction that also records its rejections and counts and deletes the
-- chunk's payload (raw records may hold personal data that must be
-- forgettable).
CREATE TABLE import_runs (
    id             text        PRIMARY KEY,
    company_id     text        NOT NULL,
    entity         text        NOT NULL,
    state          text        NOT NULL,
    actor          text        NOT NULL,
    source         text        NOT NULL,
    correlation_id text        NOT NULL,
    chunks         integer     NOT NULL DEFAULT 0, -- set when scheduled
    chunks_done    integer     NOT NULL DEFAULT 0,
    received       bigint      NOT NULL DEFAULT 0,
    accepted       bigint      NOT NULL DEFAULT 0,
    rejected       bigint      NOT NULL DEFAULT 0,
    failure        text,
    created_at     timestamptz NOT NULL DEFAULT now(),
    -- Moves with every staged chunk, so that only a stalled upload looks
    -- abandoned to the clean-up.
    updated_at     timestamptz NOT NULL DEFAULT now(),
    started_at     timestamptz,
    finished_at    timestamptz
);
CREATE INDEX import_runs_receiving ON import_runs (updated_at) WHERE state = 'receiving';

-- payload: the chunk's records, JSON objects, one per line ("\n");
-- NULL once the chunk is processed (or its run failed).
CREATE TABLE import_chunks (
    run_id       text        NOT NULL,
    seq          integer     NOT NULL,
    first_index  bigint      NOT NULL,
    records      integer     NOT NULL,
    payload      bytea,
    accepted     integer,
    rejected     integer,
    processed_at timestamptz,
    PRIMARY KEY (run_id, seq)
);

-- ord numbers the rejections of one record (a record may break several
-- rules); (record_index, ord) is the paging cursor.
CREATE TABLE import_rejections (
    run_id       text   NOT NULL,
    record_index bigint NOT NULL,
    ord          integer NOT NULL,
    reason       text   NOT NULL,
    field        text   NOT NULL DEFAULT '',
    PRIMARY KEY (run_id, record_index, ord)
);

-- The Watermill topic "import_chunks" (watermill-sql's default PostgreSQL
-- schema, as for "commits" in 00001): one message per staged chunk,
-- written in the transaction that schedules the run (outbox).
CREATE TABLE watermill_import_chunks (
    "offset"       bigserial,
    uuid           varchar(36) NOT NULL,
    created_at     timestamp   NOT NULL DEFAULT CURRENT_TIMESTAMP,
    payload        json        DEFAULT NULL,
    metadata       json        DEFAULT NULL,
    transaction_id xid8        NOT NULL,
    PRIMARY KEY (transaction_id, "offset")
);
CREATE TABLE watermill_offsets_import_chunks (
    consumer_group                varchar(255) NOT NULL,
    offset_acked                  bigint,
    last_processed_transaction_id xid8 NOT NULL,
    PRIMARY KEY (consumer_group)
);

-- +goose Down
DROP TABLE watermill_offsets_import_chunks;
DROP TABLE watermill_import_chunks;
DROP TABLE import_rejections;
DROP TABLE import_chunks;
DROP TABLE import_runs;
