package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/clientele/clientele/internal/pg/pgtest"
)

// TestCompanyExchangeRates sets, changes and removes rates with
// `company update --exchange-rate` and checks what `company` prints.
func TestCompanyExchangeRates(t *testing.T) {
	getenv := env(map[string]string{"DATABASE_URL": pgtest.URL(t), "CLIENTELE_LOG_LEVEL": "warn"})
	out := mustRun(t, getenv, "company", "create", "acme", "--exchange-rate", "usd=1.080")
	if !strings.Contains(out, "  exchange rates: USD 1.08 (per 1 EUR)\n") {
		t.Fatalf("company create printed %q", out)
	}
	out = mustRun(t, getenv, "company", "update", "acme", "--exchange-rate", "SEK=11.50", "--exchange-rate", "NOK=11.7")
	if !strings.Contains(out, "  exchange rates: NOK 11.7, SEK 11.5, USD 1.08 (per 1 EUR)\n") {
		t.Fatalf("adding rates printed %q", out)
	}
	out = mustRun(t, getenv, "company", "update", "acme", "--exchange-rate", "USD=", "--exchange-rate", "nok=12")
	if !strings.Contains(out, "  exchange rates: NOK 12, SEK 11.5 (per 1 EUR)\n") {
		t.Fatalf("removing a rate printed %q", out)
	}
	// Other settings leave the table alone.
	out = mustRun(t, getenv, "company", "update", "acme", "--name", "Acme Oy")
	if !strings.Contains(out, "  exchange rates: NOK 12, SEK 11.5 (per 1 EUR)\n") || !strings.Contains(out, "Acme Oy") {
		t.Fatalf("changing the name printed %q", out)
	}
	out = mustRun(t, getenv, "company", "update", "acme", "--exchange-rate", "NOK=", "--exchange-rate", "SEK=")
	if !strings.Contains(out, "  exchange rates: \n") {
		t.Fatalf("removing every rate printed %q", out)
	}

	for _, tt := range []struct {
		name string
		args []string
		want string // in the error
	}{
		{"no equals sign", []string{"USD"}, "want CODE=RATE"},
		{"no code", []string{"=1.08"}, "want CODE=RATE"},
		{"twice", []string{"USD=1", "usd=2"}, "USD given twice"},
		{"zero", []string{"USD=0"}, "invalid company settings"},
		{"own currency", []string{"EUR=1"}, "invalid company settings"},
		{"bad code", []string{"DOLLAR=1"}, "invalid company settings"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			args := []string{"company", "update", "acme"}
			for _, a := range tt.args {
				args = append(args, "--exchange-rate", a)
			}
			var stdout, stderr bytes.Buffer
			err := run(context.Background(), args, &stdout, &stderr, getenv)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want one containing %q", err, tt.want)
			}
		})
	}
}

// TestCompanyPhoneRegion sets and removes phone_region with `company
// create/update --phone-region` and checks what `company` prints; an
// invalid region is refused with the settings' validation error.
func TestCompanyPhoneRegion(t *testing.T) {
	getenv := env(map[string]string{"DATABASE_URL": pgtest.URL(t), "CLIENTELE_LOG_LEVEL": "warn"})
	out := mustRun(t, getenv, "company", "create", "acme")
	if !strings.Contains(out, "  phone region:   \n") {
		t.Fatalf("company create printed %q, want no phone region", out)
	}
	out = mustRun(t, getenv, "company", "update", "acme", "--phone-region", "fi")
	if !strings.Contains(out, "  phone region:   FI\n") {
		t.Fatalf("--phone-region fi printed %q", out)
	}
	out = mustRun(t, getenv, "company", "update", "acme", "--name", "Acme Oy")
	if !strings.Contains(out, "  phone region:   FI\n") {
		t.Fatalf("another setting printed %q, want FI kept", out)
	}
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{"company", "update", "acme", "--phone-region", "FIN"}, &stdout, &stderr, getenv)
	if err == nil || !strings.Contains(err.Error(), "invalid company settings") {
		t.Errorf("--phone-region FIN: %v, want invalid company settings", err)
	}
	out = mustRun(t, getenv, "company", "update", "acme", "--phone-region", "")
	if !strings.Contains(out, "  phone region:   \n") {
		t.Fatalf("--phone-region '' printed %q, want it removed", out)
	}
	out = mustRun(t, getenv, "company", "create", "globex", "--phone-region", "se")
	if !strings.Contains(out, "  phone region:   SE\n") {
		t.Fatalf("company create --phone-region se printed %q", out)
	}
}
