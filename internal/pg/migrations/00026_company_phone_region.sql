-- +goose Up
-- The company's phone_region (domain/company): the ISO 3166-1 alpha-2
-- country whose national phone numbers ("040 987 6543") its records carry,
-- read in it when a record names no country of its own; '' for none
-- (international numbers only). Kept by the inline projector "companies"
-- (projections/companies.go) from the settings in CompanyCreated and
-- CompanySettingsChanged. Companies created before it have none, which
-- the default says.
ALTER TABLE companies ADD COLUMN phone_region text NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE companies DROP COLUMN phone_region;
