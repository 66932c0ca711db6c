-- +goose Up
-- The warnings of an import run (decisions.md, Requests): the fields its
-- imported records carried that are no fields of the entity, which were
-- ignored. One row per field and run, with the number of imported records
-- that carried it and the first one's index in the upload; a run lists at
-- most 1,000 fields (importing.MaxWarnings), the first found, so that an
-- upload of endless odd columns costs a bounded number of rows. Written
-- by the chunk's transaction (ingest.Store.FinishChunk). field is a name
-- that looks like a field name, or "(unnamed)" for the keys that do not
-- (they may be personal data): no value is ever stored here.
-- The rows go with their run, whatever deletes it.
CREATE TABLE import_warnings (
    run_id      text   NOT NULL REFERENCES import_runs (id) ON DELETE CASCADE,
    field       text   NOT NULL,
    count       bigint NOT NULL,
    first_index bigint NOT NULL,
    PRIMARY KEY (run_id, field)
);

-- +goose Down
DROP TABLE import_warnings;
