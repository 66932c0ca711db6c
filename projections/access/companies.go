package access

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/clientele/clientele/domain/company"
	"github.com/clientele/clientele/eventstore"
	"github.com/clientele/clientele/projections/internal/bulk"
)

// Companies keeps the companies table and company_domains, the host
// lookup of every request.
type Companies struct{}

// Name implements Projector.
func (Companies) Name() string { return "companies" }

// Tables implements Projector.
func (Companies) Tables() []string { return []string{"companies", "company_domains"} }

type companyRow struct {
	ID               string            `json:"id"`
	Slug             string            `json:"slug"`
	Name             string            `json:"name"`
	Timezone         string            `json:"timezone"`
	Currency         string            `json:"currency"`
	ShortName        string            `json:"short_name"`
	CustomEventTypes []string          `json:"custom_event_types"`
	ExchangeRates    map[string]string `json:"exchange_rates"`
	PhoneRegion      string            `json:"phone_region"`
	CreatedAt        time.Time         `json:"created_at"`
	UpdatedAt        time.Time         `json:"updated_at"`
	domains          []string
	created          bool // by an event of this call
}

type domainRow struct {
	Domain    string `json:"domain"`
	CompanyID string `json:"company_id"`
}

// Apply folds the events into the final state of each company they touch
// (settings events carry every setting), then writes it in one round trip: an
// upsert of the created companies, an update of the others, and the
// replacement of their domains.
func (Companies) Apply(ctx context.Context, tx pgx.Tx, events []eventstore.RecordedEvent) error {
	byID := map[string]*companyRow{}
	var order []string
	for _, e := range events {
		switch e.Type {
		case company.CreatedType:
			var ev company.Created
			if err := bulk.Decode(e, &ev); err != nil {
				return err
			}
			if byID[ev.ID] == nil {
				order = append(order, ev.ID)
			}
			r := &companyRow{ID: ev.ID, Slug: ev.Slug, CreatedAt: ev.CreatedAt, UpdatedAt: ev.CreatedAt, created: true}
			r.set(ev.SettingsData)
			byID[ev.ID] = r
		case company.SettingsChangedType:
			var ev company.SettingsChanged
			if err := bulk.Decode(e, &ev); err != nil {
				return err
			}
			r := byID[ev.ID]
			if r == nil {
				r = &companyRow{ID: ev.ID}
				byID[ev.ID] = r
				order = append(order, ev.ID)
			}
			r.set(ev.SettingsData)
			r.UpdatedAt = ev.ChangedAt
		}
	}
	if len(order) == 0 {
		return nil
	}
	var created, changed []companyRow
	var domains []domainRow
	for _, id := range order {
		r := byID[id]
		if r.created {
			created = append(created, *r)
		} else {
			changed = append(changed, *r)
		}
		for _, d := range r.domains {
			domains = append(domains, domainRow{Domain: d, CompanyID: id})
		}
	}
	const record = `jsonb_to_recordset($1::jsonb) AS r(id text, slug text, name text, timezone text, currency text,
		short_name text, custom_event_types text[], exchange_rates jsonb, phone_region text, created_at timestamptz,
		updated_at timestamptz)`
	var b pgx.Batch
	if err := bulk.QueueRows(&b, "companies", `
		INSERT INTO companies (id, slug, name, timezone, currency, short_name, custom_event_types, exchange_rates, phone_region,
			created_at, updated_at)
		SELECT id, slug, name, timezone, currency, short_name, custom_event_types, exchange_rates, phone_region,
			created_at, updated_at FROM `+record+`
		ON CONFLICT (id) DO UPDATE SET name = EXCLUDED.name, timezone = EXCLUDED.timezone,
			currency = EXCLUDED.currency, short_name = EXCLUDED.short_name,
			custom_event_types = EXCLUDED.custom_event_types, exchange_rates = EXCLUDED.exchange_rates,
			phone_region = EXCLUDED.phone_region, updated_at = EXCLUDED.updated_at`, created); err != nil {
		return err
	}
	if err := bulk.QueueRows(&b, "companies", `
		UPDATE companies c SET name = r.name, timezone = r.timezone, currency = r.currency,
			short_name = r.short_name, custom_event_types = r.custom_event_types,
			exchange_rates = r.exchange_rates, phone_region = r.phone_region, updated_at = r.updated_at
		FROM `+record+` WHERE c.id = r.id`, changed); err != nil {
		return err
	}
	// Replace the domains of every company touched. A domain released by
	// one company and claimed by another within these events is deleted
	// before it is inserted again.
	b.Queue(`DELETE FROM company_domains WHERE company_id = ANY($1)`, order)
	if err := bulk.QueueRows(&b, "company_domains", `
		INSERT INTO company_domains (domain, company_id)
		SELECT domain, company_id FROM jsonb_to_recordset($1::jsonb) AS r(domain text, company_id text)`, domains); err != nil {
		return err
	}
	return bulk.SendBatch(ctx, tx, "companies", &b)
}

func (r *companyRow) set(s company.SettingsData) {
	r.Name, r.Timezone, r.Currency, r.ShortName = s.Name, s.Timezone, s.Currency, s.ShortName
	r.CustomEventTypes = bulk.OrNone(s.CustomEventTypes)
	// Settings events carry the whole table; one written before the table
	// existed has none. Never nil: {} fits the NOT NULL column.
	r.ExchangeRates = s.ExchangeRates
	if r.ExchangeRates == nil {
		r.ExchangeRates = map[string]string{}
	}
	r.PhoneRegion = s.PhoneRegion // "" in events from before it existed
	r.domains = s.Domains
}
