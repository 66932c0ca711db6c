-- +goose Up
-- No personal byte in clear at rest outside the read models (issue 25).
--
-- A staged upload's chunks are sealed with a key of their run, kept here
-- wrapped by the master key and deleted when the run is done (completed
-- or failed), or with the run: a chunk's payload, live or in a dead row
-- version, opens only while its run is being imported. Chunks staged
-- before this migration have no key and are read as they were staged.
CREATE TABLE import_run_keys (
    run_id  text  PRIMARY KEY REFERENCES import_runs (id) ON DELETE CASCADE,
    wrapped bytea NOT NULL
);

-- An outlet attempt's raw request and reply are sealed with a key of
-- their own (raw_key, wrapped by the master key), into sealed_request and
-- sealed_reply; forgetting a person whose data an attempt carried erases
-- the key with the texts. Attempts logged before this migration keep
-- their texts in http_request and http_reply, with no key.
ALTER TABLE outlet_log
    ADD COLUMN raw_key        bytea,
    ADD COLUMN sealed_request bytea,
    ADD COLUMN sealed_reply   bytea;

-- +goose Down
ALTER TABLE outlet_log DROP COLUMN raw_key, DROP COLUMN sealed_request, DROP COLUMN sealed_reply;
DROP TABLE import_run_keys;
