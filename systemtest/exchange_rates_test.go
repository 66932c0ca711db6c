package systemtest_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/clientele/clientele/readmodels"
)

// exchangeRates is the answer of GET and PUT /api/exchange-rates/.
type exchangeRates struct {
	Currency      string            `json:"currency"`
	ExchangeRates map[string]string `json:"exchange_rates"`
}

func (e *env) exchangeRates(token string, opts ...option) exchangeRates {
	e.t.Helper()
	res := e.do(http.MethodGet, "/api/exchange-rates/", append([]option{bearer(token)}, opts...)...)
	res.wantStatus(e.t, http.StatusOK)
	var a exchangeRates
	res.decode(e.t, &a)
	return a
}

func (e *env) putExchangeRates(token string, body any) exchangeRates {
	e.t.Helper()
	res := e.do(http.MethodPut, "/api/exchange-rates/", bearer(token), jsonBody(body))
	res.wantStatus(e.t, http.StatusOK)
	var a exchangeRates
	res.decode(e.t, &a)
	return a
}

func TestExchangeRates(t *testing.T) {
	e := newEnv(t)
	admin := e.userToken(e.admin, acmeHost)
	staff := e.userToken(e.staff, acmeHost)

	// No table yet: an empty object, never null.
	res := e.do(http.MethodGet, "/api/exchange-rates/", bearer(admin))
	res.wantStatus(t, http.StatusOK)
	if string(res.body) != `{"currency":"EUR","exchange_rates":{}}` {
		t.Errorf("empty table: %s", res.body)
	}

	// Rates as JSON numbers (as written: 1.10 is not read through a
	// float) or decimal strings, stored canonical.
	res = e.do(http.MethodPut, "/api/exchange-rates/", bearer(admin),
		rawBody(`{"exchange_rates": {"usd": 1.10, "SEK": "11.50", "JPY": 1.6e2, "NOK": null}}`))
	res.wantStatus(t, http.StatusOK)
	golden(t, "exchange_rates", res.body)

	// A PUT merges: named currencies change, the others stay, null and ""
	// remove.
	got := e.putExchangeRates(admin, map[string]any{"exchange_rates": map[string]any{"USD": "1.08", "NOK": 11.7}})
	want := exchangeRates{Currency: "EUR", ExchangeRates: map[string]string{"USD": "1.08", "SEK": "11.5", "JPY": "160", "NOK": "11.7"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("merge (-want +got):\n%s", diff)
	}
	got = e.putExchangeRates(admin, map[string]any{"currency": "eur", "exchange_rates": map[string]any{"JPY": nil, "nok": "", "GBP": nil}})
	want.ExchangeRates = map[string]string{"USD": "1.08", "SEK": "11.5"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("removal (-want +got):\n%s", diff)
	}
	// An empty change changes nothing and answers the table.
	if got := e.putExchangeRates(admin, map[string]any{"exchange_rates": map[string]any{}}); !cmp.Equal(want, got) {
		t.Errorf("empty change: %+v", got)
	}

	// Every principal of the company reads it, under every spelling of
	// the path: staff users and tokens of integrations without roles.
	integration := e.createIntegration(admin, "ERP")
	erp := e.createToken(admin, map[string]any{"owner_id": "integrations/" + integration}).AccessToken.Token
	for name, tok := range map[string]string{"staff": staff, "integration": erp} {
		for _, path := range []string{"/api/exchange-rates/", "/api/exchange-rates", "/exchange-rates/", "/exchange-rates"} {
			res := e.do(http.MethodGet, path, bearer(tok))
			res.wantStatus(t, http.StatusOK)
			var got exchangeRates
			res.decode(t, &got)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("%s GET %s (-want +got):\n%s", name, path, diff)
			}
		}
	}

	// Changing it needs the admin role.
	for name, tok := range map[string]string{"staff": staff, "integration": erp} {
		e.do(http.MethodPut, "/api/exchange-rates/", bearer(tok), jsonBody(map[string]any{"exchange_rates": map[string]any{"USD": 2}})).
			wantError(t, http.StatusForbidden, "forbidden")
		if got := e.exchangeRates(admin); !cmp.Equal(want, got) {
			t.Errorf("after the %s's refused PUT: %+v", name, got)
		}
	}

	// Another company's token is not a credential here; globex's own
	// table is its own.
	globex := e.userToken(e.globexAd, globexHost)
	e.do(http.MethodGet, "/api/exchange-rates/", bearer(globex)).wantError(t, http.StatusUnauthorized, "unauthorized")
	e.do(http.MethodPut, "/api/exchange-rates/", bearer(globex), jsonBody(map[string]any{"exchange_rates": map[string]any{"USD": 2}})).
		wantError(t, http.StatusUnauthorized, "unauthorized")
	if got := e.exchangeRates(globex, host(globexHost)); len(got.ExchangeRates) != 0 {
		t.Errorf("globex's table: %+v", got)
	}
	e.do(http.MethodGet, "/api/exchange-rates/").wantError(t, http.StatusUnauthorized, "unauthorized")

	// The sale importer converts with the company the import worker reads
	// from the companies read model: the table is there.
	co, err := readmodels.NewCompanies(e.pool, "localhost").ByID(context.Background(), e.acme.ID)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want.ExchangeRates, co.ExchangeRates); diff != "" {
		t.Errorf("read model (-want +got):\n%s", diff)
	}
}

func TestExchangeRatesRefused(t *testing.T) {
	e := newEnv(t)
	admin := e.userToken(e.admin, acmeHost)
	e.putExchangeRates(admin, map[string]any{"exchange_rates": map[string]any{"USD": "1.08"}})
	type detail struct{ Field, Reason string }
	tests := []struct {
		name    string
		body    string
		status  int
		code    string
		details []detail // when 422
	}{
		{"not JSON", `{"exchange_rates": {`, http.StatusBadRequest, "invalid_request", nil},
		{"empty body", ``, http.StatusBadRequest, "invalid_request", nil},
		{"no exchange_rates", `{"USD": 1.08}`, http.StatusBadRequest, "invalid_request", nil},
		{"exchange_rates null", `{"exchange_rates": null}`, http.StatusBadRequest, "invalid_request", nil},
		{"exchange_rates a list", `{"exchange_rates": [1.08]}`, http.StatusBadRequest, "invalid_request", nil},
		{"rates of the wrong type", `{"exchange_rates": {"USD": true, "SEK": {"rate": 11.5}, "NOK": [1]}}`, http.StatusUnprocessableEntity, "validation_error", []detail{
			{"exchange_rates.NOK", `must be a decimal number such as 1.08 or "1.08", or null to remove the rate`},
			{"exchange_rates.SEK", `must be a decimal number such as 1.08 or "1.08", or null to remove the rate`},
			{"exchange_rates.USD", `must be a decimal number such as 1.08 or "1.08", or null to remove the rate`},
		}},
		{"bad codes and rates, one detail each", `{"exchange_rates": {"EUR": 1, "DOLLAR": "1", "SEK": 0, "NOK": -11.7, "GBP": "1.0000000000001", "CHF": "abc", "JPY": 1e12}}`,
			http.StatusUnprocessableEntity, "validation_error", []detail{
				{"exchange_rates.CHF", "must be a positive decimal number such as 1.08, with at most 12 significant digits, between 0.000000000001 and 999999999999"},
				{"exchange_rates.DOLLAR", "not an ISO 4217 currency code of three letters, e.g. USD"},
				{"exchange_rates.EUR", "is the company's default currency, which needs no rate"},
				{"exchange_rates.GBP", "has more than 12 significant digits; give at most 12"},
				{"exchange_rates.JPY", "must be a positive decimal number such as 1.08, with at most 12 significant digits, between 0.000000000001 and 999999999999"},
				{"exchange_rates.NOK", "must be positive"},
				{"exchange_rates.SEK", "must be positive"},
			}},
		{"a code twice", `{"exchange_rates": {"SEK": 11.5, "sek": 11.6}}`, http.StatusUnprocessableEntity, "validation_error", []detail{
			{"exchange_rates.SEK", "given twice"},
		}},
		{"rates for another base currency", `{"currency": "USD", "exchange_rates": {"SEK": 10.6}}`, http.StatusUnprocessableEntity, "validation_error", []detail{
			{"currency", "is not the company's default currency EUR, to which every rate converts; change that in the company settings"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := e.do(http.MethodPut, "/api/exchange-rates/", bearer(admin), rawBody(tt.body))
			b := res.wantError(t, tt.status, tt.code)
			if tt.details != nil {
				var got []detail
				for _, d := range b.Error.Details {
					got = append(got, detail{d.Field, d.Reason})
				}
				if diff := cmp.Diff(tt.details, got); diff != "" {
					t.Errorf("details (-want +got):\n%s", diff)
				}
			}
			// Nothing of a refused request is stored.
			if got := e.exchangeRates(admin); !cmp.Equal(map[string]string{"USD": "1.08"}, got.ExchangeRates) {
				t.Errorf("table after the refusal: %+v", got)
			}
		})
	}
	e.do(http.MethodPatch, "/api/exchange-rates/", bearer(admin), jsonBody(map[string]any{"exchange_rates": map[string]any{}}),
		outsideContract("a method the path does not have")).
		wantError(t, http.StatusMethodNotAllowed, "method_not_allowed")
}
