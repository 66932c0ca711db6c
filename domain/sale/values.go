package sale

import (
	"encoding/json"
	"math/big"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/clientele/clientele/domain/values"
)

// The reasons below describe the expected form and never quote the value:
// rejections are stored.

// value normalises a value of kind k; the reason is "" when it is valid.
func value(k kind, v any, loc *time.Location) (any, string) {
	switch k {
	case kindID:
		return id(v)
	case kindDateTime:
		return values.Any(values.DateTime(v, loc))
	case kindCurrency:
		return values.Any(values.Currency(v))
	case kindRate:
		return rate(v)
	case kindMoney, kindDiscount, kindTotal:
		return amount(k, v)
	case kindQuantity:
		return quantity(v)
	case kindList, kindSet:
		l, reason := values.StringList(v)
		if reason == "" && k == kindSet {
			slices.Sort(l)
			l = slices.Compact(l)
		}
		return values.Any(l, reason)
	case kindState:
		return state(v)
	case kindBool:
		return values.Any(values.Bool(v))
	case kindURL:
		return absURL(v)
	}
	return values.Any(values.Text(v))
}

func id(v any) (any, string) {
	s, ok := values.Scalar(v)
	s = strings.TrimSpace(s)
	if !ok || s == "" || len(s) > 200 {
		return nil, "must be a non-empty string of at most 200 characters"
	}
	return s, ""
}

// rational reads a JSON number or a decimal string exactly
// (values.Decimal).
func rational(v any) (*big.Rat, bool) { return values.Decimal(v) }

// amount is a whole number of minor units. Loose clients send 1050,
// 1050.0 or "1050.00"; a fraction of a minor unit is refused, never
// rounded. A discount is taken as its absolute value (the interface:
// positive and negative values are both a discount); a total may be
// negative (a row of a negative quantity); any other amount may not.
// Every amount is an int64 (the read model's bigint), checked after the
// absolute value is taken: the absolute value of the smallest int64 is
// not one.
func amount(k kind, v any) (any, string) {
	r, ok := rational(v)
	switch {
	case !ok:
		return nil, "must be an amount in minor units (cents), such as 1050"
	case !r.IsInt():
		return nil, "must be a whole number of minor units (cents): a fraction of a minor unit is not accepted"
	}
	n := new(big.Int).Set(r.Num())
	switch {
	case k == kindDiscount:
		n.Abs(n)
	case k == kindMoney && n.Sign() < 0:
		return nil, "must not be negative"
	}
	if !n.IsInt64() {
		return nil, reasonTooLarge
	}
	return n.Int64(), ""
}

// reasonTooLarge refuses an amount outside int64, which is what every
// amount is stored as (and what sums of amounts must stay within).
const reasonTooLarge = "is too large: amounts are at most 9223372036854775807 minor units either way"

// quantity rounds to two decimals, half away from zero, exactly (0.005 is
// 0.01, 0.003 is 0), and keeps it as a JSON number without trailing
// zeros.
func quantity(v any) (any, string) {
	r, ok := rational(v)
	if !ok {
		return nil, "must be a number, such as 1 or 2.5"
	}
	hundredths := roundHalfAway(new(big.Rat).Mul(r, big.NewRat(100, 1)))
	normal, ok := readable(new(big.Rat).SetFrac(hundredths, big.NewInt(100)))
	if !ok {
		return nil, "is too large"
	}
	return json.Number(normal), ""
}

// rate is a positive decimal, kept as its shortest decimal text.
func rate(v any) (any, string) {
	r, ok := rational(v)
	if !ok || r.Sign() <= 0 {
		return nil, "must be a positive decimal number, such as 1.08"
	}
	normal, ok := readable(r)
	if !ok {
		return nil, "is too large"
	}
	return normal, ""
}

// readable returns the normal form of r (decimal) and whether it can be
// read again: 9e99 is read, but written out it has more digits than
// rational reads, and a stored value must parse as it is stored.
func readable(r *big.Rat) (string, bool) {
	normal := decimal(r)
	_, ok := rational(normal)
	return normal, ok
}

// parseRate reads a rate kept as text (stored, or from the company's
// table); nil when it is not a positive decimal.
func parseRate(s string) *big.Rat {
	r, ok := rational(s)
	if !ok || r.Sign() <= 0 {
		return nil
	}
	return r
}

func absURL(v any) (any, string) {
	s, ok := v.(string)
	s = strings.TrimSpace(s)
	u, err := url.Parse(s)
	if !ok || err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, "must be an absolute http or https URL"
	}
	return s, ""
}

// roundHalfAway rounds r to a whole number, halves away from zero.
func roundHalfAway(r *big.Rat) *big.Int {
	num := new(big.Int).Abs(r.Num())
	q, m := new(big.Int).QuoRem(num, r.Denom(), new(big.Int))
	if m.Lsh(m, 1).Cmp(r.Denom()) >= 0 {
		q.Add(q, big.NewInt(1))
	}
	if r.Sign() < 0 {
		q.Neg(q)
	}
	return q
}

// decimal writes r, a number with a finite decimal expansion (what
// decimal text and JSON numbers are), in full without trailing zeros.
func decimal(r *big.Rat) string {
	// The denominator is 2^a·5^b: max(a, b) digits are enough.
	digits := 0
	for d := new(big.Int).Set(r.Denom()); d.Cmp(big.NewInt(1)) > 0; digits++ {
		reduced := false
		for _, f := range []int64{2, 5} {
			if q, m := new(big.Int).QuoRem(d, big.NewInt(f), new(big.Int)); m.Sign() == 0 {
				d, reduced = q, true
			}
		}
		if !reduced {
			break // not a decimal: FloatString rounds
		}
	}
	s := r.FloatString(digits)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	if s == "-0" {
		s = "0"
	}
	return s
}
