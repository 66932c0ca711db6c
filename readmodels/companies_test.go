package readmodels_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/clientele/clientele/commands"
	"github.com/clientele/clientele/domain"
	"github.com/clientele/clientele/domain/access"
	"github.com/clientele/clientele/domain/company"
	"github.com/clientele/clientele/readmodels"
)

func TestCompaniesByHost(t *testing.T) {
	pool, cmds := setup(t)
	ctx := context.Background()
	q := readmodels.NewCompanies(pool, "Clientele.Example")

	// One company: the bare base domain, localhost and IPs reach it.
	a := mustCompany(t, cmds, "acme", "shop.acme.com")
	for _, host := range []string{"clientele.example", "clientele.example:8080", "localhost:8080", "127.0.0.1", "[::1]:443", "acme.clientele.example"} {
		got, err := q.ByHost(ctx, host)
		if err != nil || got.ID != a.ID {
			t.Errorf("single company: ByHost(%q) = %v, %v", host, got.ID, err)
		}
	}
	if _, err := q.ByHost(ctx, "elsewhere.example.org"); domain.ErrorCode(err) != domain.NotFound {
		t.Errorf("single company, foreign host: %v, want not found", err)
	}

	b := mustCompany(t, cmds, "beta")
	tests := []struct {
		host string
		want string // company id, "" for NotFound
	}{
		{"acme.clientele.example", a.ID},
		{"ACME.Clientele.Example:8443", a.ID},
		{"acme.clientele.example.", a.ID},
		{"beta.clientele.example", b.ID},
		{"shop.acme.com", a.ID},
		{"Shop.ACME.com:80", a.ID},
		{"gamma.clientele.example", ""},
		{"x.acme.clientele.example", ""},
		{"clientele.example", ""},
		{"localhost", ""},
		{"127.0.0.1:8080", ""},
		{"", ""},
	}
	for _, tt := range tests {
		got, err := q.ByHost(ctx, tt.host)
		switch {
		case tt.want == "" && domain.ErrorCode(err) != domain.NotFound:
			t.Errorf("ByHost(%q) = %v, %v; want not found", tt.host, got.ID, err)
		case tt.want != "" && (err != nil || got.ID != tt.want):
			t.Errorf("ByHost(%q) = %v, %v; want %s", tt.host, got.ID, err, tt.want)
		}
	}

	got, err := q.BySlug(ctx, "ACME")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(a, got, cmpopts.EquateEmpty(), cmpopts.EquateApproxTime(0)); diff != "" {
		t.Errorf("BySlug (-want +got):\n%s", diff)
	}
	if got, err := q.ByID(ctx, b.ID); err != nil || got.Slug != "beta" {
		t.Errorf("ByID = %+v, %v", got, err)
	}
	if _, err := q.ByID(ctx, "nope"); domain.ErrorCode(err) != domain.NotFound {
		t.Errorf("ByID(nope): %v", err)
	}
	if all, err := q.List(ctx); err != nil || len(all) != 2 {
		t.Errorf("List = %v, %v", all, err)
	}
}

func TestCompaniesWithoutBaseDomain(t *testing.T) {
	pool, cmds := setup(t)
	q := readmodels.NewCompanies(pool, "")
	a := mustCompany(t, cmds, "acme")
	if got, err := q.ByHost(context.Background(), "anything.example.org"); err != nil || got.ID != a.ID {
		t.Errorf("ByHost = %v, %v", got.ID, err)
	}
}

// TestCompaniesExchangeRates checks that the rate table reaches the
// company the read model answers: the import worker's chunks take their
// company from it, and the sale importer converts with its table.
func TestCompaniesExchangeRates(t *testing.T) {
	pool, cmds := setup(t)
	ctx := context.Background()
	q := readmodels.NewCompanies(pool, "")
	a := mustCompany(t, cmds, "acme")
	got, err := q.ByID(ctx, a.ID)
	if err != nil || got.ExchangeRates != nil {
		t.Errorf("no rates: ByID = %v, %v; want a nil table", got.ExchangeRates, err)
	}
	usd, sek := "1.080", "11.5"
	changed, err := cmds.UpdateCompanySettings.Handle(ctx, commands.UpdateCompanySettings{
		Principal: access.System(a.ID), CompanyID: a.ID,
		Change: company.SettingsChange{ExchangeRates: map[string]*string{"usd": &usd, "SEK": &sek}},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"USD": "1.08", "SEK": "11.5"}
	for name, get := range map[string]func() (company.Company, error){
		"ByID":   func() (company.Company, error) { return q.ByID(ctx, a.ID) },
		"BySlug": func() (company.Company, error) { return q.BySlug(ctx, "acme") },
		"ByHost": func() (company.Company, error) { return q.ByHost(ctx, "localhost") },
	} {
		got, err := get()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if diff := cmp.Diff(want, got.ExchangeRates); diff != "" {
			t.Errorf("%s: rates (-want +got):\n%s", name, diff)
		}
		if diff := cmp.Diff(changed, got, cmpopts.EquateEmpty(), cmpopts.EquateApproxTime(0)); diff != "" {
			t.Errorf("%s: company (-want +got):\n%s", name, diff)
		}
	}
}

// TestCompaniesPhoneRegion: the company's phone_region is none until set,
// then answered by every lookup, as the import worker's chunks read it.
func TestCompaniesPhoneRegion(t *testing.T) {
	pool, cmds := setup(t)
	ctx := context.Background()
	q := readmodels.NewCompanies(pool, "")
	a := mustCompany(t, cmds, "acme")
	if got, err := q.ByID(ctx, a.ID); err != nil || got.PhoneRegion != "" {
		t.Errorf("new company: phone_region %q, %v; want none", got.PhoneRegion, err)
	}
	fi := "fi"
	if _, err := cmds.UpdateCompanySettings.Handle(ctx, commands.UpdateCompanySettings{
		Principal: access.System(a.ID), CompanyID: a.ID, Change: company.SettingsChange{PhoneRegion: &fi},
	}); err != nil {
		t.Fatal(err)
	}
	for name, get := range map[string]func() (company.Company, error){
		"ByID":   func() (company.Company, error) { return q.ByID(ctx, a.ID) },
		"BySlug": func() (company.Company, error) { return q.BySlug(ctx, "acme") },
		"List": func() (company.Company, error) {
			cs, err := q.List(ctx)
			if err != nil || len(cs) != 1 {
				return company.Company{}, fmt.Errorf("List: %v %v", cs, err)
			}
			return cs[0], nil
		},
	} {
		if got, err := get(); err != nil || got.PhoneRegion != "FI" {
			t.Errorf("%s: phone_region %q, %v; want FI", name, got.PhoneRegion, err)
		}
	}
}
