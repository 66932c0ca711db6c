-- +goose Up
-- Read models of tenancy and access, kept by inline projectors
-- (projections/companies.go, users.go, integrations.go, access_tokens.go)
-- in the append transaction. They can be rebuilt from the log at any time;
-- the uniqueness they declare is guaranteed first by reservation streams
-- in the event store, and only guards the lookups here.

CREATE TABLE companies (
    id                 text        PRIMARY KEY,
    slug               text        NOT NULL,
    name               text        NOT NULL,
    timezone           text        NOT NULL,
    currency           text        NOT NULL,
    short_name         text        NOT NULL,
    custom_event_types text[]      NOT NULL DEFAULT '{}',
    created_at         timestamptz NOT NULL,
    updated_at         timestamptz NOT NULL
);
CREATE UNIQUE INDEX companies_slug ON companies (slug);

-- Custom domains, for the host lookup of every request.
CREATE TABLE company_domains (
    domain     text PRIMARY KEY,
    company_id text NOT NULL
);
CREATE INDEX company_domains_company ON company_domains (company_id);

CREATE TABLE users (
    company_id    text        NOT NULL,
    id            text        NOT NULL,
    email         text        NOT NULL,
    roles         text[]      NOT NULL,
    password_hash text        NOT NULL,
    totp_secret   text        NOT NULL DEFAULT '',
    created_at    timestamptz NOT NULL,
    PRIMARY KEY (company_id, id)
);
CREATE UNIQUE INDEX users_email ON users (company_id, email);

CREATE TABLE integrations (
    company_id       text        NOT NULL,
    id               text        NOT NULL,
    name             text        NOT NULL,
    integration_name text        NOT NULL,
    description      text        NOT NULL,
    enabled          boolean     NOT NULL,
    created_by       text        NOT NULL,
    created_at       timestamptz NOT NULL,
    PRIMARY KEY (company_id, id)
);

-- Only the SHA-256 of a token's value is stored; every request looks its
-- token up by that hash.
CREATE TABLE access_tokens (
    company_id        text        NOT NULL,
    id                text        NOT NULL,
    token_hash        text        NOT NULL,
    owner_id          text        NOT NULL,
    hint              text        NOT NULL,
    name              text        NOT NULL,
    created_by        text        NOT NULL,
    created_at        timestamptz NOT NULL,
    transferred_roles text[]      NOT NULL DEFAULT '{}',
    scopes            jsonb       NOT NULL DEFAULT '[]',
    PRIMARY KEY (company_id, id)
);
CREATE UNIQUE INDEX access_tokens_hash ON access_tokens (token_hash);
CREATE INDEX access_tokens_owner ON access_tokens (company_id, owner_id);

-- +goose Down
DROP TABLE access_tokens;
DROP TABLE integrations;
DROP TABLE users;
DROP TABLE company_domains;
DROP TABLE companies;
