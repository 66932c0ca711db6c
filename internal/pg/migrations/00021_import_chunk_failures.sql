-- +goose Up
-- The failures of a pending import chunk (commands/import_chunk_isolate.go):
-- how many attempts failed for a reason retrying does not cure, and the
-- last one's reason, stripped of quoted values (the rows outlive the
-- payload, which is deleted because it may hold personal data). The worker
-- looks for the records that fail a chunk from its third such attempt, and
-- `clientele projections status` shows the chunks that stand still.
-- isolation is that search's progress, kept between attempts (each one is
-- bounded, and the next goes on where it stopped): the number of first
-- records found to apply and the records found to fail the chunk, by
-- index, with their reasons and SQLSTATEs, never their values
-- (ingest.Isolation). NULL until a search stops short, and again once the
-- chunk is applied.
ALTER TABLE import_chunks
    ADD COLUMN failures     integer NOT NULL DEFAULT 0,
    ADD COLUMN last_failure text,
    ADD COLUMN failed_at    timestamptz,
    ADD COLUMN isolation    jsonb;

-- +goose Down
ALTER TABLE import_chunks
    DROP COLUMN isolation,
    DROP COLUMN failed_at,
    DROP COLUMN last_failure,
    DROP COLUMN failures;
