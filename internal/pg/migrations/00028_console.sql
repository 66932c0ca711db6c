-- +goose Up
-- console_sessions are the console's log-ins (package console): a
-- session is a random value in an HttpOnly cookie, stored here only as
-- its SHA-256, so that neither a copy of the table nor a backup logs
-- anyone in. A row is the session: deleting it (log-out, expiry) revokes
-- the cookie at once on every node. The user is looked up again on each
-- request, so a user's removal or change of roles applies at once too.
CREATE TABLE console_sessions (
    token_hash text        PRIMARY KEY,
    company_id text        NOT NULL,
    user_id    text        NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    expires_at timestamptz NOT NULL
);
CREATE INDEX console_sessions_expiry ON console_sessions (expires_at);
-- A log-in keeps the user's newest sessions only (console/sessions.go).
CREATE INDEX console_sessions_user ON console_sessions (company_id, user_id, created_at);

-- The console lists a company's import runs, newest first (ids are
-- UUIDv7: creation order).
CREATE INDEX import_runs_company ON import_runs (company_id, id);

-- +goose Down
DROP INDEX import_runs_company;
DROP TABLE console_sessions;
