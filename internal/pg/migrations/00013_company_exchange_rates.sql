-- +goose Up
-- The company's exchange-rate table (domain/company, exchange_rates.go):
-- by ISO 4217 code, the rate from that currency to the company's default
-- currency as a canonical decimal string, {"USD": "1.08"}. Kept by the
-- inline projector "companies" (projections/companies.go) from the
-- settings in CompanyCreated and CompanySettingsChanged; sales in another
-- currency without sale_exchange_rate are converted with it. Companies
-- created before the table existed have none, which the default says.
ALTER TABLE companies ADD COLUMN exchange_rates jsonb NOT NULL DEFAULT '{}';

-- +goose Down
ALTER TABLE companies DROP COLUMN exchange_rates;
