package console

import (
	"cmp"
	"encoding/json"
	"math/big"
	"strings"

	"github.com/clientele/clientele/domain/company"
)

// currencyOf is the company's default currency, the one of its amounts
// in minor units (sale_total, revenue).
func currencyOf(co company.Company) string { return cmp.Or(co.Currency, company.DefaultCurrency) }

// Money is stored in minor units of its currency (docs/sales.md: a
// sale_total of 16700 in EUR is 167.00 EUR); pages show it in major
// units with its currency.

// minorDigits are the currencies whose minor unit is not a hundredth
// (ISO 4217): none for the yen, three for the dinars.
var minorDigits = map[string]int{
	"BIF": 0, "CLP": 0, "DJF": 0, "GNF": 0, "ISK": 0, "JPY": 0, "KMF": 0, "KRW": 0, "PYG": 0, "RWF": 0,
	"UGX": 0, "UYI": 0, "VND": 0, "VUV": 0, "XAF": 0, "XOF": 0, "XPF": 0,
	"BHD": 3, "IQD": 3, "JOD": 3, "KWD": 3, "LYD": 3, "OMR": 3, "TND": 3,
}

// formatMoney writes an amount of minor units of currency as its major
// units with thousands separators and the currency: "167.00 EUR",
// "1,200 JPY". A value that is not a whole number is written as it is.
func formatMoney(minor any, currency string) string {
	var n big.Int
	switch v := minor.(type) {
	case json.Number:
		if _, ok := n.SetString(v.String(), 10); !ok {
			return strings.TrimSpace(v.String() + " " + currency)
		}
	case int64:
		n.SetInt64(v)
	case int:
		n.SetInt64(int64(v))
	case float64:
		n.SetInt64(int64(v))
	default:
		return ""
	}
	digits, ok := minorDigits[currency]
	if !ok {
		digits = 2
	}
	neg := n.Sign() < 0
	s := new(big.Int).Abs(&n).String()
	for len(s) <= digits {
		s = "0" + s
	}
	whole, frac := s[:len(s)-digits], s[len(s)-digits:]
	for i := len(whole) - 3; i > 0; i -= 3 {
		whole = whole[:i] + "," + whole[i:]
	}
	out := whole
	if digits > 0 {
		out += "." + frac
	}
	if neg {
		out = "-" + out
	}
	return strings.TrimSpace(out + " " + currency)
}
