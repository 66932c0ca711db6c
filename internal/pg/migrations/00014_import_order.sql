-- +goose Up
-- The order of a company's uploads, for the import worker's catch-up
-- (commands/import_worker.go): scheduled_tx is the transaction that
-- scheduled the run, the order watermill-sql delivers its chunk messages
-- in. A chunk whose deliveries gave up is applied before any later chunk
-- of its company, found with these.
ALTER TABLE import_runs ADD COLUMN scheduled_tx xid8;
-- Runs scheduled before this column existed and not finished: their
-- scheduling transaction is the one that wrote their chunk messages.
UPDATE import_runs r SET scheduled_tx = (
    SELECT min(m.transaction_id) FROM watermill_import_chunks m WHERE m.payload->>'run_id' = r.id)
WHERE r.state IN ('scheduled', 'running');
CREATE INDEX import_runs_active ON import_runs (company_id, scheduled_tx) WHERE state IN ('scheduled', 'running');
CREATE INDEX import_chunks_pending ON import_chunks (run_id, seq) WHERE processed_at IS NULL;

-- +goose Down
DROP INDEX import_chunks_pending;
DROP INDEX import_runs_active;
ALTER TABLE import_runs DROP COLUMN scheduled_tx;
