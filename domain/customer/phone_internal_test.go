package customer

import (
	"flag"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/nyaruka/phonenumbers"
)

var phoneNumbers = flag.Int("phone-numbers", 100_000, "generated numbers TestPlainE164AgreesWithParser compares")

// parsedE164 is what the library's parser makes of s, a number in
// international form: phone's answer without plainE164.
func parsedE164(s string) (string, bool) {
	n, err := phonenumbers.Parse(s, "")
	if err != nil || !phonenumbers.IsValidNumber(n) {
		return "", false
	}
	return phonenumbers.Format(n, phonenumbers.E164), true
}

// TestPlainE164AgreesWithParser: wherever plainE164 answers, it answers
// as the parser does, on every region's example numbers of every type (as
// E.164, and with the national prefix written after the country code)
// and on generated numbers: known and unknown country codes, national
// numbers of every length, with leading zeros and national prefixes.
func TestPlainE164AgreesWithParser(t *testing.T) {
	var inputs []string
	types := []phonenumbers.PhoneNumberType{phonenumbers.FIXED_LINE, phonenumbers.MOBILE, phonenumbers.TOLL_FREE,
		phonenumbers.PREMIUM_RATE, phonenumbers.SHARED_COST, phonenumbers.VOIP, phonenumbers.PERSONAL_NUMBER,
		phonenumbers.PAGER, phonenumbers.UAN, phonenumbers.VOICEMAIL}
	for region := range phonenumbers.GetSupportedRegions() {
		for _, typ := range types {
			n := phonenumbers.GetExampleNumberForType(region, typ)
			if n == nil {
				continue
			}
			e164 := phonenumbers.Format(n, phonenumbers.E164)
			cc := strconv.Itoa(int(n.GetCountryCode()))
			national := strings.TrimPrefix(e164, "+"+cc)
			inputs = append(inputs, e164, "+"+cc+"0"+national, "+"+cc+"1"+national, e164+"9", e164[:len(e164)-1])
		}
	}
	for cc := range phonenumbers.GetSupportedGlobalNetworkCallingCodes() {
		if n := phonenumbers.GetExampleNumberForNonGeoEntity(cc); n != nil {
			inputs = append(inputs, phonenumbers.Format(n, phonenumbers.E164))
		}
	}
	var codes []int
	for cc := range phonenumbers.GetSupportedCallingCodes() {
		codes = append(codes, cc)
	}
	rng := rand.New(rand.NewPCG(31, 15))
	for range *phoneNumbers {
		var b strings.Builder
		b.WriteByte('+')
		if rng.IntN(10) == 0 {
			b.WriteString(strconv.Itoa(rng.IntN(1000))) // often no country's code
		} else {
			b.WriteString(strconv.Itoa(codes[rng.IntN(len(codes))]))
		}
		switch rng.IntN(8) {
		case 0:
			b.WriteByte('0')
		case 1:
			b.WriteString(strconv.Itoa(rng.IntN(100)))
		}
		for n := rng.IntN(16); n > 0; n-- {
			b.WriteByte(byte('0' + rng.IntN(10)))
		}
		inputs = append(inputs, b.String())
	}
	answered := 0
	for _, s := range inputs {
		e164, valid, ok := plainE164(s)
		if !ok {
			continue
		}
		answered++
		want, wantValid := parsedE164(s)
		if valid != wantValid || valid && e164 != want {
			t.Errorf("%s: plainE164 says %q valid %t, the parser %q valid %t", s, e164, valid, want, wantValid)
		}
	}
	// The fast path must be taken, or this test proves nothing.
	if answered < len(inputs)/2 {
		t.Fatalf("plainE164 answered %d of %d numbers", answered, len(inputs))
	}
	t.Logf("plainE164 answered %d of %d numbers as the parser does", answered, len(inputs))
}

// TestPlainE164LeavesOtherFormsToTheParser: what is not "+" and digits,
// or may lose a national prefix or a leading zero, is not answered.
func TestPlainE164LeavesOtherFormsToTheParser(t *testing.T) {
	for _, s := range []string{
		"+358 40 123 4567", "+358-40-1234567", "+358401234567 ext 12", "+358401234567#", "+0401234567",
		"+35", "+3580401234567", "+390612345678", "+1" + strings.Repeat("2", 20),
	} {
		if _, _, ok := plainE164(s); ok {
			t.Errorf("plainE164 answered %q", s)
		}
	}
	if e164, valid, ok := plainE164("+358401234567"); !ok || !valid || e164 != "+358401234567" {
		t.Errorf("plainE164(+358401234567) = %q, %t, %t", e164, valid, ok)
	}
}
