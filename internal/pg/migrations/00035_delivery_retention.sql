-- +goose Up
-- Retention of delivery (docs/datatargets.md, "Retention").
--
-- A datatarget's own retention of delivered messages, in days: NULL takes
-- the server's default (serve --datatarget-message-retention, off unless
-- set), 0 keeps them for ever. Written by the inline projector
-- "datatargets" from DatatargetCreated and DatatargetUpdated.
ALTER TABLE datatargets ADD COLUMN message_retention_days integer;

-- The attempts whose raw texts are still kept, by status and date: the
-- pruner of delivery (delivery/retention.go) walks it oldest first in
-- bounded batches, and an entry leaves it once its texts are pruned.
CREATE INDEX outlet_log_raw_texts ON outlet_log (status, date)
    WHERE raw_key IS NOT NULL OR http_request <> '' OR http_reply <> '';

-- +goose Down
DROP INDEX outlet_log_raw_texts;
ALTER TABLE datatargets DROP COLUMN message_retention_days;
