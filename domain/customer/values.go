package customer

import (
	"encoding/json"
	"net/mail"
	"regexp"
	"strings"

	"github.com/nyaruka/phonenumbers"
	"golang.org/x/text/language"
)

// The reasons below describe the expected form only: a rejection is
// stored, and the value it refuses may be personal data.

var externalIDRE = regexp.MustCompile(`^[A-Za-z0-9-]{1,200}$`)

// maxEmail is the longest address SMTP can carry (RFC 5321).
const maxEmail = 254

// scalar returns a string or a JSON number as a string: clients send
// identifiers and codes as numbers ("zip_code": 12345). ok is false for
// booleans, lists and objects.
func scalar(v any) (s string, ok bool) {
	switch v := v.(type) {
	case string:
		return v, true
	case json.Number:
		return v.String(), true
	}
	return "", false
}

func text(v any) (string, string) {
	s, ok := scalar(v)
	if !ok {
		return "", "must be a string"
	}
	return s, ""
}

func externalID(v any) (string, string) {
	s, ok := scalar(v)
	if !ok || !externalIDRE.MatchString(strings.TrimSpace(s)) {
		return "", "must be letters, digits and dashes only, at most 200"
	}
	return strings.TrimSpace(s), ""
}

// phone accepts a number in international form only: without a leading +
// the country is a guess, and a wrong guess merges two people.
func phone(v any) (string, string) {
	const reason = "must be a valid phone number in international form, starting with +"
	s, ok := v.(string)
	s = strings.TrimSpace(s)
	if !ok || !strings.HasPrefix(s, "+") {
		return "", reason
	}
	n, err := phonenumbers.Parse(s, "")
	if err != nil || !phonenumbers.IsValidNumber(n) {
		return "", reason
	}
	// E.164 has no extension: an extension does not reach a person by SMS
	// and must not make one number two identities.
	return phonenumbers.Format(n, phonenumbers.E164), ""
}

// email accepts a bare address (no display name, no angle brackets) whose
// domain has a dot; the whole address is lower-cased, as identities are
// compared that way.
func email(v any) (string, string) {
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
	at := strings.LastIndexByte(s, '@')
	domain := s[at+1:]
	if !strings.Contains(domain, ".") || strings.HasPrefix(domain, "[") || strings.HasSuffix(domain, ".") {
		return "", reason
	}
	return strings.ToLower(s), ""
}

// country accepts an ISO 3166-1 alpha-2 code in any case; deprecated and
// common aliases are canonicalised (UK is GB).
func country(v any) (string, string) {
	const reason = "must be an ISO 3166-1 alpha-2 country code such as FI"
	s, ok := v.(string)
	s = strings.TrimSpace(s)
	if !ok || len(s) != 2 || !isASCIILetters(s) {
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

// lang accepts an ISO 639 code, or a locale such as en-US or en_US, and
// keeps the base language: the field is the customer's primary language.
func lang(v any) (string, string) {
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

// boolean accepts JSON booleans and the strings a CSV file or a loose
// client sends for them.
func boolean(v any) (bool, string) {
	const reason = "must be true or false"
	switch v := v.(type) {
	case bool:
		return v, ""
	case string, json.Number:
		s, _ := scalar(v)
		switch strings.ToLower(strings.TrimSpace(s)) {
		case "true", "1":
			return true, ""
		case "false", "0":
			return false, ""
		}
	}
	return false, reason
}

// strings returns a list of strings from a single string or a list of
// strings or numbers; empty elements and nulls are dropped.
func stringList(v any) ([]string, string) {
	const reason = "must be a string or a list of strings"
	var raw []any
	switch v := v.(type) {
	case []any:
		raw = v
	default:
		raw = []any{v}
	}
	out := make([]string, 0, len(raw))
	for _, e := range raw {
		if e == nil {
			continue
		}
		s, ok := scalar(e)
		if !ok {
			return nil, reason
		}
		if strings.TrimSpace(s) != "" {
			out = append(out, s)
		}
	}
	return out, ""
}

func isASCIILetters(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i] | 0x20
		if c < 'a' || c > 'z' {
			return false
		}
	}
	return true
}
