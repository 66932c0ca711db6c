-- +goose Up
-- Controlling delivery (docs/datatargets.md): an outlet's failure policy,
-- kept by the datatargets projector; {} retries a failing batch for ever.
ALTER TABLE datatarget_outlets ADD COLUMN failure_policy jsonb NOT NULL DEFAULT '{}';

-- +goose Down
ALTER TABLE datatarget_outlets DROP COLUMN failure_policy;
