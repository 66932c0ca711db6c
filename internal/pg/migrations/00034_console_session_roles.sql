-- +goose Up
-- A console session keeps the roles its user had at log-in: a user who
-- has since lost one of them is logged out (authn.ConsoleSessions,
-- access.KeepsRoles), as an SFTP connection or a streamed answer of theirs
-- ends (authn.Recheck). Sessions from before this column have none
-- recorded and end at their next request.
ALTER TABLE console_sessions ADD COLUMN roles text[];

-- +goose Down
ALTER TABLE console_sessions DROP COLUMN roles;
