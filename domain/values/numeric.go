package values

import (
	"strconv"
	"strings"
)

// PostgreSQL keeps a JSON number of jsonb as a numeric, whose text input
// (numeric_in) accepts exactly the numbers within these limits; found by
// experiment against the server, and proved by TestNumericMatchesServer
// (systemtest/storable_numbers_test.go) over edge cases and random numbers.
const (
	// MaxNumericIntegerDigits is the most digits before the decimal point:
	// the weight of the first digit, in base-10000 digits, is an int16.
	MaxNumericIntegerDigits = 131072
	// MaxNumericScale is the most digits after the decimal point,
	// trailing zeros included (the display scale, 14 bits): 1.0 with
	// 20,000 zeros is refused, 1e-16383 is not.
	MaxNumericScale = 16383
	// MaxNumericExponent bounds the exponent whatever the digits: the
	// server refuses |e| >= INT_MAX/2 before it looks at them, so
	// 0e1073741823 is refused while 0e1073741822 is zero.
	MaxNumericExponent = 1<<30 - 2
)

// Reasons for a number PostgreSQL cannot store. They state the limit and
// never quote the number.
const (
	ReasonNumberTooLarge = "must be a number PostgreSQL can store: at most 131072 digits before the decimal point"
	ReasonNumberScale    = "must be a number PostgreSQL can store: at most 16383 digits after the decimal point (exponent included)"
	ReasonNumberExponent = "must be a number PostgreSQL can store: an exponent of at most 1073741822 either way"
	reasonNotNumber      = "must be a JSON number"
)

// Numeric checks that PostgreSQL can store the JSON number n (the text of
// a json.Number) as a numeric, and returns the length of the text the
// server prints for it: no exponent, every digit written out (1e5 is
// 100000), trailing zeros of the fraction kept, no sign on zero. It works
// on the text alone, in time linear in its length: converting 1e131071 to
// a binary number to find out would cost more than the check is worth.
func Numeric(n string) (printed int, reason string) {
	s := n
	neg := strings.HasPrefix(s, "-")
	if neg {
		s = s[1:]
	}
	i := digitsEnd(s)
	intPart := s[:i]
	s = s[i:]
	if len(intPart) == 0 || (len(intPart) > 1 && intPart[0] == '0') {
		return 0, reasonNotNumber
	}
	var frac string
	if strings.HasPrefix(s, ".") {
		i = digitsEnd(s[1:])
		if i == 0 {
			return 0, reasonNotNumber
		}
		frac, s = s[1:1+i], s[1+i:]
	}
	var exp int64
	if len(s) > 0 {
		if s[0] != 'e' && s[0] != 'E' {
			return 0, reasonNotNumber
		}
		s = s[1:]
		expNeg := strings.HasPrefix(s, "-")
		if expNeg || strings.HasPrefix(s, "+") {
			s = s[1:]
		}
		if s == "" || digitsEnd(s) != len(s) {
			return 0, reasonNotNumber
		}
		// The server reads the exponent with strtol: leading zeros are
		// nothing, and an overflow is refused like any large exponent.
		s = strings.TrimLeft(s, "0")
		if len(s) > 10 {
			return 0, ReasonNumberExponent
		}
		if s != "" {
			exp, _ = strconv.ParseInt(s, 10, 64)
		}
		if exp > MaxNumericExponent {
			return 0, ReasonNumberExponent
		}
		if expNeg {
			exp = -exp
		}
	}
	scale := max(int64(len(frac))-exp, 0)
	if scale > MaxNumericScale {
		return 0, ReasonNumberScale
	}
	// weight is the power of ten of the first digit that is not zero.
	var weight int64
	switch {
	case intPart != "0":
		weight = int64(len(intPart)) - 1 + exp
	case strings.Trim(frac, "0") != "":
		weight = -int64(len(frac)-len(strings.TrimLeft(frac, "0"))) - 1 + exp
	default:
		// Zero: no sign, "0" and the scale's zeros.
		return 1 + dotAndScale(scale), ""
	}
	if weight >= MaxNumericIntegerDigits {
		return 0, ReasonNumberTooLarge
	}
	printed = 1 + dotAndScale(scale)
	if weight > 0 {
		printed += int(weight)
	}
	if neg {
		printed++
	}
	return printed, ""
}

// digitsEnd returns the length of the run of ASCII digits that starts s.
func digitsEnd(s string) int {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	return i
}

// dotAndScale is the length of the fraction as printed: the point and the
// digits, none for a scale of zero.
func dotAndScale(scale int64) int {
	if scale == 0 {
		return 0
	}
	return 1 + int(scale)
}
