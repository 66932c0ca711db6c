package customer

import (
	"strconv"
	"strings"
	"sync"
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
		if e164, valid, ok := plainE164(s); ok {
			if !valid {
				return "", reason
			}
			return e164, ""
		}
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

// plainE164 reads a number written as E.164 writes it, "+" and digits
// only, the form most shops and ERPs send, without the library's parser:
// the parser's extension and punctuation patterns cost half the time of
// parsing a customer. It finds the country calling code as the parser does
// (the first of its one to three digits that is a code) and leaves the
// national number whole, which is what the parser makes of it when the
// number cannot begin with its country's national prefix and has no
// leading zero; the library then says whether the number is valid.
// Anything else (ok false) goes to the parser. TestPlainE164AgreesWithParser
// checks that both agree on the library's example numbers and on a
// hundred thousand generated ones (a million with -phone-numbers).
func plainE164(s string) (e164 string, valid, ok bool) {
	digits := s[1:]
	if len(digits) < 3 || len(digits) > 20 || digits[0] == '0' {
		return "", false, false
	}
	for i := 0; i < len(digits); i++ {
		if digits[i] < '0' || digits[i] > '9' {
			return "", false, false
		}
	}
	prefixes := nationalPrefixes()
	for i := 1; i <= 3; i++ {
		cc, _ := strconv.Atoi(digits[:i])
		prefix, known := prefixes[cc]
		if !known {
			if phonenumbers.GetSupportedCallingCodes()[cc] {
				return "", false, false // a code whose national prefix is a pattern
			}
			continue
		}
		national := digits[i:]
		if len(national) < 2 || len(national) > 17 || national[0] == '0' || prefix != "" && strings.HasPrefix(national, prefix) {
			return "", false, false
		}
		nn, err := strconv.ParseUint(national, 10, 64)
		if err != nil {
			return "", false, false
		}
		code := int32(cc)
		return s, phonenumbers.IsValidNumber(&phonenumbers.PhoneNumber{CountryCode: &code, NationalNumber: &nn}), true
	}
	return "", false, false
}

// nationalPrefixes maps each country calling code to the national prefix
// that the parser strips from its numbers (the metadata's national prefix
// for parsing, of the code's main region), for the codes whose prefix is
// digits or nothing; a code whose prefix is a pattern is left out.
var nationalPrefixes = sync.OnceValue(func() map[int]string {
	coll, err := phonenumbers.MetadataCollection()
	if err != nil {
		return nil
	}
	out := map[int]string{}
	for cc := range phonenumbers.GetSupportedCallingCodes() {
		region := phonenumbers.GetRegionCodeForCountryCode(cc)
		for _, md := range coll.GetMetadata() {
			if md.GetId() != region || region == "001" && int(md.GetCountryCode()) != cc {
				continue
			}
			if p := md.GetNationalPrefixForParsing(); strings.Trim(p, "0123456789") == "" {
				out[cc] = p
			}
			break
		}
	}
	return out
})
