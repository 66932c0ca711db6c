-- +goose Up
-- An outlet's secret and header values sealed at rest (docs/datatargets.md,
-- "Secrets"): the datatargets projector keeps them as the events carry
-- them, sealed with a data key of their own (credentials_key, wrapped by
-- the master key), and the hints in request's headers and in secret.
-- NULL: an outlet whose events carry them in clear (created or last
-- changed before), whose request and secret hold them as they were.
ALTER TABLE datatarget_outlets
    ADD COLUMN credentials_key    bytea,
    ADD COLUMN sealed_credentials bytea;

-- +goose Down
ALTER TABLE datatarget_outlets DROP COLUMN credentials_key, DROP COLUMN sealed_credentials;
