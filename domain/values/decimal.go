package values

import (
	"math/big"
	"strings"
)

// maxDecimal bounds the text of a Decimal: with an exponent of at most
// two digits, no accepted number has more than about 200 digits, however
// it is written (1e999999999 would have a billion).
const maxDecimal = 100

// Decimal reads a JSON number or a decimal string exactly: an optional
// sign, digits with an optional fraction, and an optional exponent of at
// most two digits, in at most 100 characters. big.Rat alone would also
// take fractions ("1/3"), base prefixes ("0x10") and digit separators
// ("1_000"), which no client means as a decimal number.
func Decimal(v any) (*big.Rat, bool) {
	s, ok := Scalar(v)
	s = strings.TrimSpace(s)
	if !ok || len(s) > maxDecimal || !decimalText(s) {
		return nil, false
	}
	return new(big.Rat).SetString(s)
}

// decimalText reports whether s is [+-]digits[.digits][(e|E)[+-]d[d]],
// with at least one digit before the exponent (".5" and "5." included).
func decimalText(s string) bool {
	s = strings.TrimLeft(s[:min(len(s), 1)], "+-") + s[min(len(s), 1):]
	mantissa, exp, hasExp := strings.Cut(strings.ToLower(s), "e")
	whole, frac, _ := strings.Cut(mantissa, ".")
	if !digits(whole) || !digits(frac) || whole+frac == "" {
		return false
	}
	if hasExp {
		exp = strings.TrimLeft(exp[:min(len(exp), 1)], "+-") + exp[min(len(exp), 1):]
		return exp != "" && len(exp) <= 2 && digits(exp)
	}
	return true
}

// digits reports whether s is ASCII digits only ("" is).
func digits(s string) bool {
	for i := range len(s) {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
