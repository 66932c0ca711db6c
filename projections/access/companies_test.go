package access_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/clientele/clientele/commands"
	"github.com/clientele/clientele/domain/access"
	"github.com/clientele/clientele/domain/company"
	"github.com/clientele/clientele/eventstore"
	"github.com/clientele/clientele/eventstore/postgres"
	"github.com/clientele/clientele/projections"
	accessprojections "github.com/clientele/clientele/projections/access"
	"github.com/clientele/clientele/projections/internal/projectiontest"
)

type companyRow struct {
	ID, Slug, Name, Timezone, Currency, ShortName string
	CustomEventTypes                              []string
	CreatedAt, UpdatedAt                          time.Time
}

func companyRows(t *testing.T, pool *pgxpool.Pool) []companyRow {
	t.Helper()
	rows, err := pool.Query(context.Background(), `SELECT id, slug, name, timezone, currency, short_name, custom_event_types, created_at, updated_at FROM companies ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []companyRow
	for rows.Next() {
		var r companyRow
		if err := rows.Scan(&r.ID, &r.Slug, &r.Name, &r.Timezone, &r.Currency, &r.ShortName, &r.CustomEventTypes, &r.CreatedAt, &r.UpdatedAt); err != nil {
			t.Fatal(err)
		}
		r.CreatedAt, r.UpdatedAt = r.CreatedAt.UTC(), r.UpdatedAt.UTC()
		out = append(out, r)
	}
	return out
}

func domainRows(t *testing.T, pool *pgxpool.Pool) map[string]string {
	t.Helper()
	rows, err := pool.Query(context.Background(), `SELECT domain, company_id FROM company_domains`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var d, c string
		if err := rows.Scan(&d, &c); err != nil {
			t.Fatal(err)
		}
		out[d] = c
	}
	return out
}

func TestCompaniesProjector(t *testing.T) {
	pool := projectiontest.PgtestPool(t)
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	t1 := t0.Add(time.Hour)
	a, err := company.New("a", "acme", company.Settings{Name: "Acme", Domains: []string{"shop.acme.com", "acme.fi"}, CustomEventTypes: []string{"REVIEW"}}, t0)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := company.New("b", "beta", company.Settings{Name: "Beta"}, t0)

	// One call with both creations.
	projectiontest.ApplyInline(t, pool, projectiontest.Recorded(t, "a", company.CreatedType, company.NewCreated(a)), projectiontest.Recorded(t, "b", company.CreatedType, company.NewCreated(b)))
	want := []companyRow{
		{ID: "a", Slug: "acme", Name: "Acme", Timezone: "UTC", Currency: "EUR", ShortName: "ACME", CustomEventTypes: []string{"REVIEW"}, CreatedAt: t0, UpdatedAt: t0},
		{ID: "b", Slug: "beta", Name: "Beta", Timezone: "UTC", Currency: "EUR", ShortName: "BETA", CustomEventTypes: []string{}, CreatedAt: t0, UpdatedAt: t0},
	}
	if diff := cmp.Diff(want, companyRows(t, pool)); diff != "" {
		t.Errorf("companies (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]string{"shop.acme.com": "a", "acme.fi": "a"}, domainRows(t, pool)); diff != "" {
		t.Errorf("domains (-want +got):\n%s", diff)
	}

	// a gives acme.fi to b in one page of events: the release is applied
	// before the claim.
	noFi := []string{"shop.acme.com"}
	tz := "Europe/Helsinki"
	a2, changed, _ := a.ChangeSettings(company.SettingsChange{Domains: &noFi, Timezone: &tz})
	fi := []string{"acme.fi"}
	b2, changedB, _ := b.ChangeSettings(company.SettingsChange{Domains: &fi})
	projectiontest.ApplyInline(t, pool,
		projectiontest.Recorded(t, "a", company.SettingsChangedType, company.NewSettingsChanged(a2, changed, t1)),
		projectiontest.Recorded(t, "b", company.SettingsChangedType, company.NewSettingsChanged(b2, changedB, t1)),
	)
	want[0].Timezone, want[0].UpdatedAt = tz, t1
	want[1].UpdatedAt = t1
	if diff := cmp.Diff(want, companyRows(t, pool)); diff != "" {
		t.Errorf("companies (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]string{"shop.acme.com": "a", "acme.fi": "b"}, domainRows(t, pool)); diff != "" {
		t.Errorf("domains (-want +got):\n%s", diff)
	}

	// Creation and change in the same call (a rebuild page) end in the
	// final state.
	pool2 := projectiontest.PgtestPool(t)
	projectiontest.ApplyInline(t, pool2,
		projectiontest.Recorded(t, "a", company.CreatedType, company.NewCreated(a)),
		projectiontest.Recorded(t, "a", company.SettingsChangedType, company.NewSettingsChanged(a2, changed, t1)),
	)
	if diff := cmp.Diff(want[:1], companyRows(t, pool2)); diff != "" {
		t.Errorf("rebuilt companies (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]string{"shop.acme.com": "a"}, domainRows(t, pool2)); diff != "" {
		t.Errorf("rebuilt domains (-want +got):\n%s", diff)
	}
}

// exchangeRates reads the exchange_rates column of every company.
func exchangeRates(t *testing.T, pool *pgxpool.Pool) map[string]map[string]string {
	t.Helper()
	rows, err := pool.Query(context.Background(), `SELECT id, exchange_rates FROM companies`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]map[string]string{}
	for rows.Next() {
		var id string
		var rates map[string]string
		if err := rows.Scan(&id, &rates); err != nil {
			t.Fatal(err)
		}
		out[id] = rates
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestCompaniesProjectorExchangeRates follows the rate table through the
// creation, a change, an event written before the table existed, and a
// rebuild (which replays the log into scratch tables).
func TestCompaniesProjectorExchangeRates(t *testing.T) {
	pool := projectiontest.PgtestPool(t)
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	a, err := company.New("a", "acme", company.Settings{Name: "Acme", ExchangeRates: map[string]string{"USD": "1.08"}}, t0)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := company.New("b", "beta", company.Settings{Name: "Beta"}, t0)
	projectiontest.ApplyInline(t, pool, projectiontest.Recorded(t, "a", company.CreatedType, company.NewCreated(a)), projectiontest.Recorded(t, "b", company.CreatedType, company.NewCreated(b)))
	want := map[string]map[string]string{"a": {"USD": "1.08"}, "b": {}}
	if diff := cmp.Diff(want, exchangeRates(t, pool)); diff != "" {
		t.Errorf("after creation (-want +got):\n%s", diff)
	}

	sek, usd := "11.50", "1.1"
	a2, changed, err := a.ChangeSettings(company.SettingsChange{ExchangeRates: map[string]*string{"SEK": &sek, "USD": &usd}})
	if err != nil {
		t.Fatal(err)
	}
	b2, changedB, _ := b.ChangeSettings(company.SettingsChange{ExchangeRates: map[string]*string{"NOK": &sek}})
	projectiontest.ApplyInline(t, pool,
		projectiontest.Recorded(t, "a", company.SettingsChangedType, company.NewSettingsChanged(a2, changed, t0)),
		projectiontest.Recorded(t, "b", company.SettingsChangedType, company.NewSettingsChanged(b2, changedB, t0)))
	want = map[string]map[string]string{"a": {"USD": "1.1", "SEK": "11.5"}, "b": {"NOK": "11.5"}}
	if diff := cmp.Diff(want, exchangeRates(t, pool)); diff != "" {
		t.Errorf("after a change (-want +got):\n%s", diff)
	}

	// A settings event from before the table existed has no
	// exchange_rates key: the company has no rates.
	projectiontest.ApplyInline(t, pool, eventstore.RecordedEvent{StreamID: "company-b", StreamVersion: 3, Type: company.SettingsChangedType,
		Data:     []byte(`{"id":"b","name":"Beta","timezone":"UTC","currency":"EUR","short_name":"BETA","domains":[],"custom_event_types":[],"changed":["name"],"changed_at":"2025-01-01T00:00:00Z"}`),
		Metadata: eventstore.Metadata{CompanyID: "b"}})
	want["b"] = map[string]string{}
	if diff := cmp.Diff(want, exchangeRates(t, pool)); diff != "" {
		t.Errorf("after an old event (-want +got):\n%s", diff)
	}
}

// TestCompaniesRebuildKeepsExchangeRates rebuilds the companies read model
// from a log written by the commands.
func TestCompaniesRebuildKeepsExchangeRates(t *testing.T) {
	ctx := context.Background()
	pool := projectiontest.PgtestPool(t)
	store := projectiontest.InlineStore(pool)
	cmds := commands.New(store, time.Now)
	a, err := cmds.CreateCompany.Handle(ctx, commands.CreateCompany{Principal: access.System(""), Slug: "acme",
		Settings: company.Settings{Name: "Acme", ExchangeRates: map[string]string{"usd": "1.080"}}})
	if err != nil {
		t.Fatal(err)
	}
	sek := "11.5"
	if _, err := cmds.UpdateCompanySettings.Handle(ctx, commands.UpdateCompanySettings{Principal: access.System(a.ID), CompanyID: a.ID,
		Change: company.SettingsChange{ExchangeRates: map[string]*string{"SEK": &sek, "USD": nil, "NOK": &sek}}}); err != nil {
		t.Fatal(err)
	}
	want := map[string]map[string]string{a.ID: {"SEK": "11.5", "NOK": "11.5"}}
	if diff := cmp.Diff(want, exchangeRates(t, pool)); diff != "" {
		t.Errorf("before the rebuild (-want +got):\n%s", diff)
	}
	if _, err := pool.Exec(ctx, `UPDATE companies SET exchange_rates = '{}'`); err != nil {
		t.Fatal(err)
	}
	if err := projections.Rebuild(ctx, pool, store, postgres.EventLog{}, accessprojections.Companies{}, projections.KindInline, nil); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, exchangeRates(t, pool)); diff != "" {
		t.Errorf("after the rebuild (-want +got):\n%s", diff)
	}
}
