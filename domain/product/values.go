package product

import (
	"math"
	"math/big"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/clientele/clientele/domain/values"
)

// The reasons below describe the expected form and never quote the value:
// rejections are stored.

// value normalises a value of kind k; the reason is "" when it is valid.
func value(k kind, v any, loc timeLocation) (any, string) {
	switch k {
	case kindOneOrList:
		if _, ok := v.([]any); !ok {
			return text(v)
		}
		return stringList(v, false)
	case kindList:
		return stringList(v, false)
	case kindSet:
		return stringList(v, true)
	case kindMoney:
		return money(v)
	case kindBool:
		return boolean(v)
	case kindNumber:
		return number(v)
	case kindInteger:
		return integer(v)
	case kindDateTime:
		return dateTime(v, loc)
	case kindURL:
		return absURL(v)
	case kindLanguage:
		return lang(v)
	case kindCurrency:
		return currency(v)
	}
	return text(v)
}

// stringList accepts a list of strings (or numbers), or a single string;
// blanks and nulls are dropped. A set is sorted and without duplicates.
func stringList(v any, set bool) (any, string) {
	raw, ok := v.([]any)
	if !ok {
		raw = []any{v}
	}
	out := make([]string, 0, len(raw))
	for _, e := range raw {
		if e == nil {
			continue
		}
		s, ok := values.Scalar(e)
		if !ok {
			return nil, "must be a string or a list of strings"
		}
		if strings.TrimSpace(s) != "" {
			out = append(out, s)
		}
	}
	if set {
		slices.Sort(out)
		out = slices.Compact(out)
	}
	return out, ""
}

// rational reads a JSON number or a decimal string exactly
// (values.Decimal).
func rational(v any) (*big.Rat, bool) { return values.Decimal(v) }

// money is an amount in minor units. Loose clients send 1050, 1050.0 or
// "1050.00"; a fraction of a minor unit is refused, never rounded: a
// price silently changed is worse than a record to fix.
func money(v any) (any, string) {
	r, ok := rational(v)
	switch {
	case !ok:
		return nil, "must be an amount in minor units (cents), such as 1050"
	case !r.IsInt():
		return nil, "must be a whole number of minor units (cents): a fraction of a minor unit is not accepted"
	case r.Sign() < 0:
		return nil, "must not be negative"
	case !r.Num().IsInt64():
		return nil, "is too large"
	}
	return r.Num().Int64(), ""
}

func integer(v any) (any, string) {
	r, ok := rational(v)
	if !ok || !r.IsInt() || !r.Num().IsInt64() {
		return nil, "must be a whole number"
	}
	return r.Num().Int64(), ""
}

func number(v any) (any, string) {
	s, ok := values.Scalar(v)
	f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if !ok || err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return nil, "must be a number"
	}
	return f, ""
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

func text(v any) (any, string)     { return values.Any(values.Text(v)) }
func boolean(v any) (any, string)  { return values.Any(values.Bool(v)) }
func lang(v any) (any, string)     { return values.Any(values.Language(v)) }
func currency(v any) (any, string) { return values.Any(values.Currency(v)) }
