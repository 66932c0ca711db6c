package projections_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/clientele/clientele/domain/company"
	"github.com/clientele/clientele/internal/pg/pgtest"
)

func pgtestPool(t *testing.T) *pgxpool.Pool { return pgtest.NewPool(t) }

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
	pool := pgtestPool(t)
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	t1 := t0.Add(time.Hour)
	a, err := company.New("a", "acme", company.Settings{Name: "Acme", Domains: []string{"shop.acme.com", "acme.fi"}, CustomEventTypes: []string{"REVIEW"}}, t0)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := company.New("b", "beta", company.Settings{Name: "Beta"}, t0)

	// One call with both creations.
	applyInline(t, pool, recorded(t, "a", company.CreatedType, company.NewCreated(a)), recorded(t, "b", company.CreatedType, company.NewCreated(b)))
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
	applyInline(t, pool,
		recorded(t, "a", company.SettingsChangedType, company.NewSettingsChanged(a2, changed, t1)),
		recorded(t, "b", company.SettingsChangedType, company.NewSettingsChanged(b2, changedB, t1)),
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
	pool2 := pgtestPool(t)
	applyInline(t, pool2,
		recorded(t, "a", company.CreatedType, company.NewCreated(a)),
		recorded(t, "a", company.SettingsChangedType, company.NewSettingsChanged(a2, changed, t1)),
	)
	if diff := cmp.Diff(want[:1], companyRows(t, pool2)); diff != "" {
		t.Errorf("rebuilt companies (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]string{"shop.acme.com": "a"}, domainRows(t, pool2)); diff != "" {
		t.Errorf("rebuilt domains (-want +got):\n%s", diff)
	}
}
