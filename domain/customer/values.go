package customer

import (
	"regexp"
	"strings"
	"unicode"

	"github.com/clientele/clientele/domain/values"
	"github.com/nyaruka/phonenumbers"
)

// The reasons below describe the expected form only: a rejection is
// stored, and the value it refuses may be personal data.

var externalIDRE = regexp.MustCompile(`^[A-Za-z0-9-]{1,200}$`)

func externalID(v any) (string, string) {
	s, ok := values.Scalar(v)
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
	e164 := phonenumbers.Format(n, phonenumbers.E164)
	// The library reads letters as a keypad's digits ("+358 call me" is
	// +358225563): garbage would become someone's number, and an identity.
	// Letters may only introduce an extension ("ext. 12", "x12"): the
	// number before them must be the whole number.
	if i := strings.IndexFunc(s, unicode.IsLetter); i >= 0 {
		m, err := phonenumbers.Parse(s[:i], "")
		if err != nil || n.GetExtension() == "" || phonenumbers.Format(m, phonenumbers.E164) != e164 {
			return "", reason
		}
	}
	return e164, ""
}
