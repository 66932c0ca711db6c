package company_test

import (
	"errors"
	"maps"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/clientele/clientele/domain"
	"github.com/clientele/clientele/domain/company"
)

func TestNormalizeRate(t *testing.T) {
	tests := []struct {
		name, in, want string // want "" when refused
	}{
		{"plain", "1.08", "1.08"},
		{"trailing zeros", "11.50", "11.5"},
		{"integer with fraction zeros", "1000.000", "1000"},
		{"integer", "7", "7"},
		{"leading zeros", "007.5", "7.5"},
		{"no integer part", ".05", "0.05"},
		{"trailing point", "3.", "3"},
		{"exponent", "1.15e1", "11.5"},
		{"negative exponent", "5E-4", "0.0005"},
		{"exponent with plus", "1e+3", "1000"},
		{"spaces", " 1.5 ", "1.5"},
		{"twelve significant digits", "1.23456789012", "1.23456789012"},
		{"twelve digits with zeros around", "000.000123456789012000", "0.000123456789012"},
		{"smallest", "0.000000000001", "0.000000000001"},
		{"largest", "999999999999", "999999999999"},
		{"thirteen significant digits", "1.234567890123", ""},
		{"too large", "1e12", ""},
		{"too small", "0.0000000000009", ""},
		{"zero", "0", ""},
		{"zero with fraction", "0.000", ""},
		{"negative", "-1.08", ""},
		{"plus sign", "+1.08", ""},
		{"comma", "1,08", ""},
		{"empty", "", ""},
		{"point only", ".", ""},
		{"fraction", "1/3", ""},
		{"hex", "0x10", ""},
		{"exponent without digits", "1e", ""},
		{"huge exponent", "1e100000", ""},
		{"text", "NaN", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := company.NormalizeRate(tt.in)
			if tt.want == "" {
				if domain.ErrorCode(err) != domain.Validation {
					t.Errorf("NormalizeRate(%q) = %q, %v; want a validation error", tt.in, got, err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("NormalizeRate(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
			}
		})
	}
}

func TestExchangeRatesValidation(t *testing.T) {
	now := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		name  string
		rates map[string]string
		want  map[string]string   // the table of the new company
		bad   []domain.FieldError // the details, when refused
	}{
		{"normalised", map[string]string{"usd": "1.080", " sek ": "11.5e0"}, map[string]string{"USD": "1.08", "SEK": "11.5"}, nil},
		{"empty is nil", map[string]string{}, nil, nil},
		{"own currency", map[string]string{"EUR": "1"}, nil, []domain.FieldError{{Field: "exchange_rates.EUR", Reason: "is the company's default currency, which needs no rate"}}},
		{"bad code and bad rates, all reported", map[string]string{"EURO": "1", "USD": "0", "SEK": "abc"}, nil, []domain.FieldError{
			{Field: "exchange_rates.EURO", Reason: "not an ISO 4217 currency code of three letters, e.g. USD"},
			{Field: "exchange_rates.SEK", Reason: "must be a positive decimal number such as 1.08, with at most 12 significant digits, between 0.000000000001 and 999999999999"},
			{Field: "exchange_rates.USD", Reason: "must be positive"},
		}},
		{"same code twice", map[string]string{"USD": "1.1", "usd": "1.2"}, nil, []domain.FieldError{{Field: "exchange_rates.USD", Reason: "given twice"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := company.New("c1", "acme", company.Settings{Name: "Acme", ExchangeRates: tt.rates}, now)
			if tt.bad == nil {
				if err != nil {
					t.Fatalf("New: %v", err)
				}
				if diff := cmp.Diff(tt.want, c.ExchangeRates); diff != "" {
					t.Errorf("rates (-want +got):\n%s", diff)
				}
				return
			}
			var e *domain.Error
			if !errors.As(err, &e) || e.Code != domain.Validation {
				t.Fatalf("New: %v, want a validation error", err)
			}
			if diff := cmp.Diff(tt.bad, e.Details); diff != "" {
				t.Errorf("details (-want +got):\n%s", diff)
			}
		})
	}
	many := map[string]string{}
	for i := range company.MaxExchangeRates + 1 {
		many[string([]byte{'A' + byte(i/26%26), 'A' + byte(i%26), 'X'})] = "1"
	}
	if _, err := company.New("c1", "acme", company.Settings{Name: "Acme", ExchangeRates: many}, now); domain.ErrorCode(err) != domain.Validation {
		t.Errorf("a table of %d: %v, want a validation error", len(many), err)
	}
}

func ptr(s string) *string { return &s }

func TestChangeExchangeRates(t *testing.T) {
	c, err := company.New("c1", "acme", company.Settings{Name: "Acme", ExchangeRates: map[string]string{"USD": "1.08"}}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		name    string
		change  map[string]*string
		want    map[string]string
		changed []string
	}{
		{"add two, merged into the table", map[string]*string{"sek": ptr("11.50"), "NOK": ptr("11.7")},
			map[string]string{"USD": "1.08", "SEK": "11.5", "NOK": "11.7"}, []string{"exchange_rates"}},
		{"change one, remove one (any case)", map[string]*string{"USD": ptr("1.1"), "nok": nil},
			map[string]string{"USD": "1.1", "SEK": "11.5"}, []string{"exchange_rates"}},
		{"the same value in another form changes nothing", map[string]*string{"SEK": ptr("11.500")},
			map[string]string{"USD": "1.1", "SEK": "11.5"}, nil},
		{"removing an absent currency changes nothing", map[string]*string{"GBP": nil},
			map[string]string{"USD": "1.1", "SEK": "11.5"}, nil},
		{"remove all", map[string]*string{"USD": nil, "SEK": nil}, nil, []string{"exchange_rates"}},
	}
	for _, st := range steps {
		before := c.Settings()
		next, changed, err := c.ChangeSettings(company.SettingsChange{ExchangeRates: st.change})
		if err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		if diff := cmp.Diff(st.want, next.ExchangeRates, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("%s: rates (-want +got):\n%s", st.name, diff)
		}
		if diff := cmp.Diff(st.changed, changed); diff != "" {
			t.Errorf("%s: changed (-want +got):\n%s", st.name, diff)
		}
		if !maps.Equal(before.ExchangeRates, c.ExchangeRates) {
			t.Errorf("%s: the original company changed: %v", st.name, c.ExchangeRates)
		}
		c = next
	}

	c, _, _ = c.ChangeSettings(company.SettingsChange{ExchangeRates: map[string]*string{"USD": ptr("1.08")}})
	for name, ch := range map[string]company.SettingsChange{
		"bad rate":                      {ExchangeRates: map[string]*string{"SEK": ptr("-1")}},
		"code twice":                    {ExchangeRates: map[string]*string{"SEK": ptr("11"), "sek": nil}},
		"own currency":                  {ExchangeRates: map[string]*string{"EUR": ptr("1")}},
		"currency becomes a rated one":  {Currency: ptr("usd")},
		"bad code even when other good": {ExchangeRates: map[string]*string{"SEK": ptr("11"), "S1K": ptr("2")}},
	} {
		if _, _, err := c.ChangeSettings(ch); domain.ErrorCode(err) != domain.Validation {
			t.Errorf("%s: %v, want a validation error", name, err)
		}
	}
	// The default currency may become a rated one when its rate goes in
	// the same change.
	c2, changed, err := c.ChangeSettings(company.SettingsChange{Currency: ptr("USD"), ExchangeRates: map[string]*string{"USD": nil, "EUR": ptr("0.93")}})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"currency", "exchange_rates"}, changed); diff != "" {
		t.Errorf("changed (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]string{"EUR": "0.93"}, c2.ExchangeRates); diff != "" {
		t.Errorf("rates (-want +got):\n%s", diff)
	}
}

func TestExchangeRatesCopied(t *testing.T) {
	c, err := company.New("c1", "acme", company.Settings{Name: "Acme", ExchangeRates: map[string]string{"USD": "1.08"}}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	s := c.Settings()
	s.ExchangeRates["USD"] = "2"
	if c.ExchangeRates["USD"] != "1.08" {
		t.Errorf("Settings shares the company's table")
	}
	ev := company.NewCreated(c)
	got := ev.Company()
	ev.ExchangeRates["USD"] = "3"
	if got.ExchangeRates["USD"] != "1.08" {
		t.Errorf("the company shares the event's table")
	}
}

func TestExchangeRatesInEvents(t *testing.T) {
	c, err := company.New("c1", "acme", company.Settings{Name: "Acme", ExchangeRates: map[string]string{"USD": "1.08"}}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	created := company.NewCreated(c)
	if diff := cmp.Diff(map[string]string{"USD": "1.08"}, created.ExchangeRates); diff != "" {
		t.Errorf("Created (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(c, created.Company()); diff != "" {
		t.Errorf("Created round trip (-want +got):\n%s", diff)
	}
	c2, changed, err := c.ChangeSettings(company.SettingsChange{ExchangeRates: map[string]*string{"SEK": ptr("11.5")}})
	if err != nil {
		t.Fatal(err)
	}
	ev := company.NewSettingsChanged(c2, changed, time.Now())
	if diff := cmp.Diff(map[string]string{"USD": "1.08", "SEK": "11.5"}, ev.ExchangeRates); diff != "" {
		t.Errorf("SettingsChanged (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(c2, ev.Apply(c)); diff != "" {
		t.Errorf("SettingsChanged round trip (-want +got):\n%s", diff)
	}
	// An event written before the table existed has none: applying it
	// leaves the company without rates.
	old := company.NewSettingsChanged(c, []string{"name"}, time.Now())
	old.ExchangeRates = nil
	if got := old.Apply(c2).ExchangeRates; len(got) != 0 {
		t.Errorf("an event without rates left %v", got)
	}
}
