package console

import (
	"encoding/json"
	"testing"
)

// TestFormatMoney: minor units shown as major units with the currency,
// by the currency's own minor unit.
func TestFormatMoney(t *testing.T) {
	for _, c := range []struct {
		minor    any
		currency string
		want     string
	}{
		{json.Number("16700"), "EUR", "167.00 EUR"},
		{json.Number("5"), "EUR", "0.05 EUR"},
		{json.Number("-123456789"), "USD", "-1,234,567.89 USD"},
		{json.Number("1200"), "JPY", "1,200 JPY"},
		{json.Number("1500"), "KWD", "1.500 KWD"},
		{int64(0), "EUR", "0.00 EUR"},
		{json.Number("12.5"), "EUR", "12.5 EUR"},
	} {
		if got := formatMoney(c.minor, c.currency); got != c.want {
			t.Errorf("formatMoney(%v, %s) = %q, want %q", c.minor, c.currency, got, c.want)
		}
	}
}
