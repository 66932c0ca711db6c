package customer

import (
	"strings"
	"unicode"

	"github.com/nyaruka/phonenumbers"
)

// The reasons phone gives: with a region to read national numbers in, and
// without one.
const (
	reasonPhone         = "must be a valid phone number in international form, starting with +"
	reasonPhoneRegional = "must be a valid phone number, in international form (starting with +) or national for the record's country or the company's phone_region"
)

// phone accepts a number in international form, or a national number
// when region, an ISO 3166-1 alpha-2 code, says whose it is: the record's
// country, else the company's phone_region (Parser.region). With neither,
// a number without a leading + is refused: its country would be a guess,
// and a wrong guess merges two people. With a stated region it is no
// guess: "040 987 6543" of a Finnish record is +358409876543, as the
// shopper meant. A number invalid in that region is refused.
func phone(v any, region string) (string, string) {
	reason := reasonPhone
	if region != "" {
		reason = reasonPhoneRegional
	}
	s, ok := v.(string)
	s = strings.TrimSpace(s)
	if !ok || s == "" || region == "" && !strings.HasPrefix(s, "+") {
		return "", reason
	}
	if strings.HasPrefix(s, "+") {
		region = "" // the number says its country
	}
	n, err := phonenumbers.Parse(s, region)
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
		m, err := phonenumbers.Parse(s[:i], region)
		if err != nil || phonenumbers.Format(m, phonenumbers.E164) != e164 {
			return "", reason
		}
	}
	return e164, ""
}
