-- +goose Up
-- Customer tracking tokens (docs/customers.md, "Tracking tokens"): every
-- customer holds a random token that Clientele issues, and an event
-- naming only the token is its customer's. The token is an identity of
-- its own kind in the registry, keyed by its hash like the others (the
-- token itself is only in the customer's sealed events), and the state
-- keeps the key the customer holds, so that forgetting frees it.
ALTER TABLE customer_identities
    DROP CONSTRAINT customer_identities_kind_check,
    ADD CONSTRAINT customer_identities_kind_check
        CHECK (kind IN ('external_id', 'email', 'phone', 'customer_token'));
ALTER TABLE customer_states ADD COLUMN token_hash bytea;
-- The customers still to be issued a token: those created before this
-- migration (commands.IssueCustomerTokensHandler, run by serve), and any
-- a process of an older version creates during a rolling deploy. A
-- customer is created with its token, so the index is empty once the
-- backfill is done, and costs the imports nothing.
CREATE INDEX customer_states_tokenless ON customer_states (company_id, customer_id)
    WHERE token_hash IS NULL AND NOT deleted AND NOT forgotten;

-- +goose Down
-- The tokens stay in the customers' events (and so in retrieval after a
-- rebuild), but no longer find anyone.
DROP INDEX customer_states_tokenless;
ALTER TABLE customer_states DROP COLUMN token_hash;
DELETE FROM customer_identities WHERE kind = 'customer_token';
ALTER TABLE customer_identities
    DROP CONSTRAINT customer_identities_kind_check,
    ADD CONSTRAINT customer_identities_kind_check CHECK (kind IN ('external_id', 'email', 'phone'));
