package company_test

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/clientele/clientele/domain"
	"github.com/clientele/clientele/domain/company"
)

func TestNew(t *testing.T) {
	now := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	ok := company.Settings{Name: "Acme", Timezone: "Europe/Helsinki", Currency: "eur"}
	tests := []struct {
		name     string
		slug     string
		settings company.Settings
		field    string // the field of the validation error, "" when valid
	}{
		{"valid", "acme", ok, ""},
		{"slug with digits and hyphens", "acme-2", ok, ""},
		{"slug upper-case is lowered", "ACME", ok, ""},
		{"slug starts with hyphen", "-acme", ok, "slug"},
		{"slug with dot", "acme.shop", ok, "slug"},
		{"slug too long", strings.Repeat("a", 64), ok, "slug"},
		{"slug of 63", strings.Repeat("a", 63), ok, ""},
		{"no name", "acme", company.Settings{Timezone: "UTC", Currency: "EUR"}, "name"},
		{"unknown timezone", "acme", company.Settings{Name: "A", Timezone: "Mars/Olympus", Currency: "EUR"}, "timezone"},
		{"local timezone", "acme", company.Settings{Name: "A", Timezone: "Local", Currency: "EUR"}, "timezone"},
		{"currency of four letters", "acme", company.Settings{Name: "A", Currency: "EURO"}, "currency"},
		{"currency with digit", "acme", company.Settings{Name: "A", Currency: "E1R"}, "currency"},
		{"short name with underscore", "acme", company.Settings{Name: "A", ShortName: "AC_ME"}, "short_name"},
		{"bad domain", "acme", company.Settings{Name: "A", Domains: []string{"shop"}}, "domains"},
		{"IP domain", "acme", company.Settings{Name: "A", Domains: []string{"10.0.0.1"}}, "domains"},
		{"domain with port", "acme", company.Settings{Name: "A", Domains: []string{"shop.example.com:80"}}, "domains"},
		{"bad event type", "acme", company.Settings{Name: "A", CustomEventTypes: []string{"Order_Placed"}}, "custom_event_types"},
		{"event type with double underscore", "acme", company.Settings{Name: "A", CustomEventTypes: []string{"A__B"}}, "custom_event_types"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := company.New("c1", tt.slug, tt.settings, now)
			if tt.field == "" {
				if err != nil {
					t.Fatalf("New: %v", err)
				}
				return
			}
			if domain.ErrorCode(err) != domain.Validation {
				t.Fatalf("New: %v, want a validation error", err)
			}
			if tt.field == "slug" {
				return
			}
			var e *domain.Error
			if !errors.As(err, &e) || len(e.Details) == 0 || e.Details[0].Field != tt.field {
				t.Errorf("details %+v, want field %s", e.Details, tt.field)
			}
		})
	}
}

func TestNewDefaultsAndNormalisation(t *testing.T) {
	now := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	c, err := company.New("c1", " Acme-Shop ", company.Settings{
		Name:             " Acme ",
		Domains:          []string{"Shop.Example.COM.", "shop.example.com", "a.example.org"},
		CustomEventTypes: []string{"ORDER_PLACED", "ORDER_PLACED", "REVIEW"},
	}, now)
	if err != nil {
		t.Fatal(err)
	}
	want := company.Company{
		ID: "c1", Slug: "acme-shop", Name: "Acme", Timezone: "UTC", Currency: "EUR", ShortName: "ACMESHOP",
		Domains: []string{"a.example.org", "shop.example.com"}, CustomEventTypes: []string{"ORDER_PLACED", "REVIEW"},
		CreatedAt: now,
	}
	if diff := cmp.Diff(want, c); diff != "" {
		t.Errorf("company (-want +got):\n%s", diff)
	}
	if got := company.ShortNameFromSlug(strings.Repeat("ab-", 20)); len(got) != 32 {
		t.Errorf("ShortNameFromSlug: %q", got)
	}
}

func TestChangeSettings(t *testing.T) {
	c, err := company.New("c1", "acme", company.Settings{Name: "Acme", Domains: []string{"shop.example.com"}}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	tz, cur := "Europe/Stockholm", "sek"
	none := []string{}
	c2, changed, err := c.ChangeSettings(company.SettingsChange{Timezone: &tz, Currency: &cur, Domains: &none})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"timezone", "currency", "domains"}, changed); diff != "" {
		t.Errorf("changed (-want +got):\n%s", diff)
	}
	if c2.Timezone != tz || c2.Currency != "SEK" || c2.Name != "Acme" || len(c2.Domains) != 0 {
		t.Errorf("changed company %+v", c2)
	}
	if len(c.Domains) != 1 {
		t.Errorf("the original changed: %+v", c)
	}
	_, changed, err = c2.ChangeSettings(company.SettingsChange{Timezone: &tz})
	if err != nil || len(changed) != 0 {
		t.Errorf("no-op change: %v, %v", changed, err)
	}
	bad := "Nowhere/City"
	if _, _, err := c2.ChangeSettings(company.SettingsChange{Timezone: &bad}); domain.ErrorCode(err) != domain.Validation {
		t.Errorf("bad timezone: %v", err)
	}
}

func TestEventsRoundTrip(t *testing.T) {
	c, err := company.New("c1", "acme", company.Settings{Name: "Acme", CustomEventTypes: []string{"X"}}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(c, company.NewCreated(c).Company(), cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("Created round trip (-want +got):\n%s", diff)
	}
	name := "Acme Oy"
	c2, changed, _ := c.ChangeSettings(company.SettingsChange{Name: &name})
	if diff := cmp.Diff(c2, company.NewSettingsChanged(c2, changed, time.Now()).Apply(c), cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("SettingsChanged round trip (-want +got):\n%s", diff)
	}
}

// TestPhoneRegion: phone_region is empty by default (international
// numbers only), set as an ISO 3166-1 alpha-2 country in any case
// (canonicalised), removed with "", refused with a detail naming it when
// it is no country with a numbering plan, and carried by the settings
// events.
func TestPhoneRegion(t *testing.T) {
	c, err := company.New("c1", "acme", company.Settings{Name: "Acme"}, time.Now())
	if err != nil || c.PhoneRegion != "" {
		t.Fatalf("new company: phone_region %q, %v; want none", c.PhoneRegion, err)
	}
	fi, uk, none := " fi ", "uk", ""
	c2, changed, err := c.ChangeSettings(company.SettingsChange{PhoneRegion: &fi})
	if err != nil || c2.PhoneRegion != "FI" || !slices.Equal(changed, []string{"phone_region"}) {
		t.Errorf("set fi: %q %v %v; want FI, changed phone_region", c2.PhoneRegion, changed, err)
	}
	if diff := cmp.Diff(c2, company.NewSettingsChanged(c2, changed, time.Now()).Apply(c), cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("SettingsChanged round trip (-want +got):\n%s", diff)
	}
	if c3, _, err := c2.ChangeSettings(company.SettingsChange{PhoneRegion: &uk}); err != nil || c3.PhoneRegion != "GB" {
		t.Errorf("set uk: %q %v; want GB", c3.PhoneRegion, err)
	}
	if c4, changed, err := c2.ChangeSettings(company.SettingsChange{PhoneRegion: &none}); err != nil || c4.PhoneRegion != "" || len(changed) != 1 {
		t.Errorf("remove: %q %v %v", c4.PhoneRegion, changed, err)
	}
	if _, changed, _ := c2.ChangeSettings(company.SettingsChange{Name: &fi}); slices.Contains(changed, "phone_region") {
		t.Errorf("another setting changed phone_region: %v", changed)
	}
	for _, bad := range []string{"FIN", "EU", "ZZ", "F1", "358"} {
		_, _, err := c.ChangeSettings(company.SettingsChange{PhoneRegion: &bad})
		var de *domain.Error
		if !errors.As(err, &de) || de.Code != domain.Validation || len(de.Details) != 1 || de.Details[0].Field != "phone_region" {
			t.Errorf("phone_region %q: %v; want a validation error of phone_region", bad, err)
		}
	}
	created, err := company.New("c2", "globex", company.Settings{Name: "Globex", PhoneRegion: "se"}, time.Now())
	if err != nil || created.PhoneRegion != "SE" || company.NewCreated(created).Company().PhoneRegion != "SE" {
		t.Errorf("created with se: %q %v", created.PhoneRegion, err)
	}
}
