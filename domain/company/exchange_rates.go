package company

import (
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/clientele/clientele/domain"
)

// Limits of the exchange-rate table. A rate has at most MaxRateDigits
// significant digits (more would be a precision the conversion to minor
// units cannot use, and is refused rather than rounded) and lies between
// 10^-12 and 10^12; a table holds at most MaxExchangeRates currencies
// (there are fewer than 200 in use), which bounds the settings events.
const (
	MaxRateDigits    = 12
	MaxExchangeRates = 300
)

// rateRE is an unsigned decimal number, optionally with an exponent: rates
// arrive as JSON numbers written as the client wrote them (1.08, 1e-3).
var rateRE = regexp.MustCompile(`^([0-9]*)(?:\.([0-9]*))?(?:[eE]([+-]?[0-9]{1,4}))?$`)

// rateReason describes a valid rate without quoting the value.
const rateReason = "must be a positive decimal number such as 1.08, with at most 12 significant digits, between 0.000000000001 and 999999999999"

// NormalizeRate checks an exchange rate given as a decimal string and
// returns its canonical form: plain decimal notation, no exponent, no
// leading or trailing zeros ("11.50" and "1.15e1" are "11.5", "1000.0" is
// "1000", ".05" is "0.05"). The error is a validation error whose message
// is the reason.
func NormalizeRate(s string) (string, error) {
	s = strings.TrimSpace(s)
	if strings.HasPrefix(s, "-") {
		return "", domain.Errorf(domain.Validation, "must be positive")
	}
	m := rateRE.FindStringSubmatch(s)
	if m == nil || m[1]+m[2] == "" {
		return "", domain.Errorf(domain.Validation, rateReason)
	}
	// The value is digits * 10^exp.
	digits, exp := m[1]+m[2], -len(m[2])
	if m[3] != "" {
		e, _ := strconv.Atoi(m[3]) // at most four digits: cannot fail
		exp += e
	}
	digits = strings.TrimLeft(digits, "0")
	if digits == "" {
		return "", domain.Errorf(domain.Validation, "must be positive")
	}
	trimmed := strings.TrimRight(digits, "0")
	exp += len(digits) - len(trimmed)
	digits = trimmed
	if len(digits) > MaxRateDigits {
		return "", domain.Errorf(domain.Validation, "has more than 12 significant digits; give at most 12")
	}
	// whole is the number of digits before the decimal point (<= 0 for a
	// rate below 1): 10^(whole-1) <= rate < 10^whole.
	whole := len(digits) + exp
	if whole > 12 || whole < -11 {
		return "", domain.Errorf(domain.Validation, rateReason)
	}
	switch {
	case exp >= 0:
		return digits + strings.Repeat("0", exp), nil
	case whole > 0:
		return digits[:whole] + "." + digits[whole:], nil
	default:
		return "0." + strings.Repeat("0", -whole) + digits, nil
	}
}

// normalizeCode upper-cases a currency code as given, for comparison.
func normalizeCode(code string) string { return strings.ToUpper(strings.TrimSpace(code)) }

// validateRates checks a table against the company's currency (already
// normalised) and returns it with codes upper-cased and rates canonical;
// nil when empty. Codes are checked for their form only (three letters),
// like the company's own currency: the ISO 4217 list changes (VES, SLE,
// ZWG are recent) faster than any list compiled into the binary.
func validateRates(rates map[string]string, own string, bad func(field, reason string)) map[string]string {
	if len(rates) == 0 {
		return nil
	}
	if len(rates) > MaxExchangeRates {
		bad("exchange_rates", "at most 300 currencies")
		return rates
	}
	out := make(map[string]string, len(rates))
	seen := make(map[string]bool, len(rates))
	for _, given := range slices.Sorted(maps.Keys(rates)) {
		code := normalizeCode(given)
		field := "exchange_rates." + code
		switch {
		case seen[code]:
			bad(field, "given twice")
			continue
		case !currencyRE.MatchString(code):
			bad(field, "not an ISO 4217 currency code of three letters, e.g. USD")
			continue
		case code == own:
			bad(field, "is the company's default currency, which needs no rate")
			continue
		}
		seen[code] = true
		rate, err := NormalizeRate(rates[given])
		if err != nil {
			bad(field, domain.ErrorMessage(err))
			continue
		}
		out[code] = rate
	}
	return out
}

// mergeRates applies a change of single rates to a table: a nil rate
// removes the currency, another sets it. Codes are compared upper-cased;
// a code given twice in one change (usd and USD) is a validation error.
// The result is validated later, with the other settings.
func mergeRates(table map[string]string, change map[string]*string) (map[string]string, error) {
	out := maps.Clone(table)
	if out == nil {
		out = map[string]string{}
	}
	seen := map[string]bool{}
	var problems domain.Problems
	for _, given := range slices.Sorted(maps.Keys(change)) {
		code := normalizeCode(given)
		if seen[code] {
			problems.Add("exchange_rates."+code, "given twice")
			continue
		}
		seen[code] = true
		if r := change[given]; r == nil {
			delete(out, code)
		} else {
			out[code] = *r
		}
	}
	if err := problems.Err(domain.Validation, "invalid company settings"); err != nil {
		return nil, err
	}
	return out, nil
}
