package customer

import (
	"strings"
	"unicode"

	"github.com/nyaruka/phonenumbers"
)

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
	e164 := phonenumbers.Format(n, phonenumbers.E164)
	// The library reads letters as a keypad's digits ("+358 call me" is
	// +358225563): garbage would become someone's number, and an identity.
	// Letters may only introduce an extension ("ext. 12", "x12"): the
	// number before them must be the whole number.
	if i := strings.IndexFunc(s, unicode.IsLetter); i >= 0 {
		if n.GetExtension() == "" {
			return "", reason
		}
		m, err := phonenumbers.Parse(s[:i], "")
		if err != nil || phonenumbers.Format(m, phonenumbers.E164) != e164 {
			return "", reason
		}
	}
	return e164, ""
}
