-- +goose Up
-- sftp_keys is the read model of the public keys registered for the
-- companies' SFTP drop directories (projections/sftp_keys.go, inline: a
-- key logs in as soon as it is added, and no longer once removed). The
-- SFTP server looks a key up by its fingerprint within the company that
-- the log-in's user name names.
CREATE TABLE sftp_keys (
    company_id  text        NOT NULL,
    id          text        NOT NULL,
    name        text        NOT NULL,
    fingerprint text        NOT NULL,
    public_key  text        NOT NULL,
    created_by  text        NOT NULL,
    created_at  timestamptz NOT NULL,
    PRIMARY KEY (company_id, id)
);
CREATE INDEX sftp_keys_fingerprint ON sftp_keys (company_id, fingerprint);

-- +goose Down
DROP TABLE sftp_keys;
