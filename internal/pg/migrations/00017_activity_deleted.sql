-- +goose Up
-- activity_deleted is the write side of event deletions
-- (commands/import_events.go): the ids of a company's deleted events, so
-- that deleting an event again (a client retrying an upload, a data query
-- matching deleted events) is accepted and changes nothing: no second
-- EventDeleted in the log, no second datasync message. Rebuildable from the
-- log: one row per EventDeleted.
CREATE TABLE activity_deleted (
    company_id text   NOT NULL,
    id         bigint NOT NULL,
    PRIMARY KEY (company_id, id)
);
INSERT INTO activity_deleted (company_id, id)
SELECT DISTINCT company_id, (data->>'id')::bigint FROM events WHERE event_type = 'EventDeleted';

-- +goose Down
DROP TABLE activity_deleted;
