// Package values parses the field values that imported records carry, the
// same way for every entity: loose JSON types (identifiers as numbers,
// booleans as strings from CSV), normal forms (lower-cased emails,
// canonical country codes, UTC datetimes), and rejection reasons that
// describe the expected form without quoting the value (rejections are
// stored, and a value may be personal data).
//
// Each parser returns the normal form and "", or the zero value and the
// reason the value is refused.
package values

import (
	"encoding/json"
	"net/mail"
	"strings"

	"golang.org/x/text/language"
)

// maxEmail is the longest address SMTP can carry (RFC 5321).
const maxEmail = 254

// Scalar returns a string or a JSON number as a string: clients send
// identifiers and codes as numbers ("zip_code": 12345). ok is false for
// booleans, lists and objects.
func Scalar(v any) (s string, ok bool) {
	switch v := v.(type) {
	case string:
		return v, true
	case json.Number:
		return v.String(), true
	}
	return "", false
}

// Text accepts a string or a number (kept as its text).
func Text(v any) (string, string) {
	s, ok := Scalar(v)
	if !ok {
		return "", "must be a string"
	}
	return s, ""
}

// Blank reports whether v is a string of spaces only: "" removes a field.
func Blank(v any) bool {
	s, ok := v.(string)
	return ok && strings.TrimSpace(s) == ""
}

// Email accepts a bare address (no display name, no angle brackets) whose
// domain has a dot; the whole address is lower-cased, as identities are
// compared that way.
func Email(v any) (string, string) {
	const reason = "must be an email address such as name@example.com"
	s, ok := v.(string)
	s = strings.TrimSpace(s)
	if !ok || len(s) > maxEmail {
		return "", reason
	}
	a, err := mail.ParseAddress(s)
	if err != nil || a.Address != s || a.Name != "" {
		return "", reason
	}
	domain := s[strings.LastIndexByte(s, '@')+1:]
	if !strings.Contains(domain, ".") || strings.HasPrefix(domain, "[") || strings.HasSuffix(domain, ".") {
		return "", reason
	}
	return strings.ToLower(s), ""
}

// Country accepts an ISO 3166-1 alpha-2 code in any case; deprecated and
// common aliases are canonicalised (UK is GB).
func Country(v any) (string, string) {
	const reason = "must be an ISO 3166-1 alpha-2 country code such as FI"
	s, ok := v.(string)
	s = strings.TrimSpace(s)
	if !ok || len(s) != 2 || !asciiLetters(s) {
		return "", reason
	}
	r, err := language.ParseRegion(s)
	if err != nil {
		return "", reason
	}
	r = r.Canonicalize()
	if !r.IsCountry() {
		return "", reason
	}
	return r.String(), ""
}

// Language accepts an ISO 639 code, or a locale such as en-US or en_US,
// and keeps the base language.
func Language(v any) (string, string) {
	const reason = "must be a language code such as fi or en"
	s, ok := v.(string)
	if !ok {
		return "", reason
	}
	t, err := language.Parse(strings.TrimSpace(s))
	if err != nil || t == language.Und {
		return "", reason
	}
	b, conf := t.Base()
	if conf != language.Exact {
		return "", reason
	}
	return b.String(), ""
}

// Currency accepts an ISO 4217-looking code in any case, upper-cased.
func Currency(v any) (string, string) {
	s, ok := v.(string)
	s = strings.ToUpper(strings.TrimSpace(s))
	if !ok || len(s) != 3 || !asciiLetters(s) {
		return "", "must be an ISO 4217 currency code such as EUR"
	}
	return s, ""
}

// Bool accepts JSON booleans and the strings a CSV file or a loose client
// sends for them: true/false in any case, 1/0.
func Bool(v any) (bool, string) {
	switch v := v.(type) {
	case bool:
		return v, ""
	case string, json.Number:
		s, _ := Scalar(v)
		switch strings.ToLower(strings.TrimSpace(s)) {
		case "true", "1":
			return true, ""
		case "false", "0":
			return false, ""
		}
	}
	return false, "must be true or false"
}

// StringList returns a list of strings from a single string or a list of
// strings or numbers; empty elements and nulls are dropped.
func StringList(v any) ([]string, string) {
	raw, ok := v.([]any)
	if !ok {
		raw = []any{v}
	}
	out := make([]string, 0, len(raw))
	for _, e := range raw {
		if e == nil {
			continue
		}
		s, ok := Scalar(e)
		if !ok {
			return nil, "must be a string or a list of strings"
		}
		if strings.TrimSpace(s) != "" {
			out = append(out, s)
		}
	}
	return out, ""
}

func asciiLetters(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i] | 0x20
		if c < 'a' || c > 'z' {
			return false
		}
	}
	return true
}

// Any adapts a parser's result to parsers that return any: the value, or
// nil with the reason.
func Any[T any](v T, reason string) (any, string) {
	if reason != "" {
		return nil, reason
	}
	return v, ""
}

// NoCustomerID reports whether v, sent as a customer id (an event's
// customer_id, a sale's sale_customer_id), means "no customer id": shop
// plugins send 0, "0", "" or null for a guest, whose email or phone then
// finds or creates the customer. Read as an id, every guest would be one
// customer "0" (decisions, Requests: guests).
func NoCustomerID(v any) bool {
	s, ok := Scalar(v)
	s = strings.TrimSpace(s)
	return v == nil || ok && (s == "" || s == "0")
}
