-- +goose Up
-- totp_steps is the write side of two-factor log-ins
-- (readmodels/access.go, AuthenticatePassword): per user, the last TOTP
-- time step (Unix time / 30 s) whose code was accepted. A code is accepted
-- only for a later step, checked and recorded in one statement, so a code
-- seen once (over a shoulder, in a proxy's log) cannot open a second
-- session, on this node or any other. It is not derived from events: a
-- rebuild leaves it alone, and losing it only lets the codes of the last
-- minute be used once more.
CREATE TABLE totp_steps (
    company_id text   NOT NULL,
    user_id    text   NOT NULL,
    step       bigint NOT NULL,
    PRIMARY KEY (company_id, user_id)
);

-- +goose Down
DROP TABLE totp_steps;
