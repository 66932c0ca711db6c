package systemtest_test

import (
	"context"
	"testing"

	"github.com/clientele/clientele/commands"
	"github.com/clientele/clientele/domain/access"
	"github.com/clientele/clientele/domain/company"
)

// accepted is a case of one accepted record whose customer, found with
// filter, has the fields of want.
func accepted(name, body, filter, want string) ruleCase {
	return ruleCase{name: name, rounds: oneByOne(okRec(body)), check: expect(filter, want)}
}

// refused is a case of one record rejected naming field; no customer
// matches filter afterwards.
func refused(name, field, body, filter string) ruleCase {
	return ruleCase{name: name, rounds: oneByOne(badRec(field, body)), check: noneFound(filter)}
}

// TestCustomerRuleFields: each field's value is validated and normalised
// as docs/customers.md (Fields) says, a bad value rejects the record
// naming the field, and the record creates nothing. Company acme has the
// default timezone, UTC.
func TestCustomerRuleFields(t *testing.T) {
	s := newRuleSuite(t)
	s.run(t, s.acmeJSON(), []ruleCase{
		// At least one of external_id, phone_number, email (or the
		// customer_token Clientele issued: tracking_tokens_test.go).
		{name: "identifier required: none given", rounds: oneByOne(badRecFor("", "at least one of external_id, phone_number, email, customer_token is required",
			`{"first_name": "Nobody-1", "city": "Oulu", "can_email": true}`)), check: noneFound("first_name=Nobody-1")},
		{name: "identifier required: blank and null ones are none", rounds: oneByOne(badRecFor("", "at least one of external_id",
			`{"external_id": "", "email": "  ", "phone_number": null, "first_name": "Nobody-2"}`)), check: noneFound("first_name=Nobody-2")},
		accepted("identifier: external_id alone", `{"external_id": "id-only-1", "first_name": "Ext"}`, "external_id=id-only-1", `{"first_name": "Ext"}`),
		accepted("identifier: email alone", `{"email": "id-only-2@example.com", "first_name": "Mail"}`, "email=id-only-2@example.com", `{"first_name": "Mail"}`),
		accepted("identifier: phone_number alone", `{"phone_number": "+358401000001", "first_name": "Phone"}`, "phone_number=+358401000001", `{"first_name": "Phone"}`),

		// external_id: letters, digits and dashes.
		accepted("external_id: letters digits dashes kept as sent", `{"external_id": "Ab-09-xY"}`, "external_id=Ab-09-xY", `{"external_id": "Ab-09-xY"}`),
		accepted("external_id: JSON number is a string", `{"external_id": 4711001}`, "external_id=4711001", `{"external_id": "4711001"}`),
		accepted("external_id: trimmed", `{"external_id": "  ext-trim-1 "}`, "external_id=ext-trim-1", `{"external_id": "ext-trim-1"}`),
		refused("external_id: underscore rejected", "external_id", `{"external_id": "ext_1", "first_name": "Bad-ext-1"}`, "first_name=Bad-ext-1"),
		refused("external_id: space inside rejected", "external_id", `{"external_id": "ext 2", "first_name": "Bad-ext-2"}`, "first_name=Bad-ext-2"),
		refused("external_id: dot rejected", "external_id", `{"external_id": "ext.3", "first_name": "Bad-ext-3"}`, "first_name=Bad-ext-3"),
		refused("external_id: non-ASCII letter rejected", "external_id", `{"external_id": "ext-ä", "first_name": "Bad-ext-4"}`, "first_name=Bad-ext-4"),
		refused("external_id: fractional number rejected", "external_id", `{"external_id": 1.5, "first_name": "Bad-ext-5"}`, "first_name=Bad-ext-5"),
		refused("external_id: boolean rejected", "external_id", `{"external_id": true, "first_name": "Bad-ext-6"}`, "first_name=Bad-ext-6"),
		refused("external_id: over 200 characters rejected", "external_id",
			`{"external_id": "`+longID(201)+`", "first_name": "Bad-ext-7"}`, "first_name=Bad-ext-7"),
		accepted("external_id: 200 characters accepted", `{"external_id": "`+longID(200)+`"}`, "external_id="+longID(200), `{}`),

		// phone_number: international form, stored E.164.
		accepted("phone: international form normalised to E.164", `{"external_id": "ph-1", "phone_number": "+358 (40) 100-0002"}`,
			"external_id=ph-1", `{"phone_number": "+358401000002"}`),
		accepted("phone: found by its E.164 form", `{"external_id": "ph-2", "phone_number": "+44 20 7946 0958"}`,
			"phone_number=+442079460958", `{"external_id": "ph-2"}`),
		accepted("phone: extension dropped", `{"external_id": "ph-3", "phone_number": "+358401000003 ext. 12"}`,
			"external_id=ph-3", `{"phone_number": "+358401000003"}`),
		refused("phone: without + rejected", "phone_number", `{"external_id": "ph-4", "phone_number": "0401000004"}`, "external_id=ph-4"),
		refused("phone: 00 prefix rejected", "phone_number", `{"external_id": "ph-5", "phone_number": "00358401000005"}`, "external_id=ph-5"),
		refused("phone: invalid number rejected", "phone_number", `{"external_id": "ph-6", "phone_number": "+358 1"}`, "external_id=ph-6"),
		refused("phone: too long rejected", "phone_number", `{"external_id": "ph-7", "phone_number": "+3584012345678901"}`, "external_id=ph-7"),
		refused("phone: JSON number rejected", "phone_number", `{"external_id": "ph-8", "phone_number": 358401000008}`, "external_id=ph-8"),
		refused("phone: letters rejected", "phone_number", `{"external_id": "ph-9", "phone_number": "+358 call me"}`, "external_id=ph-9"),

		// email: validated, lower-cased.
		accepted("email: lower-cased", `{"external_id": "em-1", "email": "Mixed.Case@Example.COM"}`, "external_id=em-1",
			`{"email": "mixed.case@example.com"}`),
		accepted("email: found by its lower-case form", `{"external_id": "em-2", "email": " Found.Me@EXAMPLE.org "}`,
			"email=found.me@example.org", `{"external_id": "em-2"}`),
		refused("email: no @ rejected", "email", `{"external_id": "em-3", "email": "not-an-email"}`, "external_id=em-3"),
		refused("email: display name rejected", "email", `{"external_id": "em-4", "email": "Ann <ann@example.com>"}`, "external_id=em-4"),
		refused("email: domain without dot rejected", "email", `{"external_id": "em-5", "email": "ann@localhost"}`, "external_id=em-5"),
		refused("email: two @ rejected", "email", `{"external_id": "em-6", "email": "ann@@example.com"}`, "external_id=em-6"),
		refused("email: number rejected", "email", `{"external_id": "em-7", "email": 42}`, "external_id=em-7"),

		// country: ISO 3166-1 alpha-2, upper-case.
		accepted("country: fi is FI", `{"external_id": "co-1", "country": "fi"}`, "external_id=co-1", `{"country": "FI"}`),
		accepted("country: mixed case", `{"external_id": "co-2", "country": "Se"}`, "external_id=co-2", `{"country": "SE"}`),
		accepted("country: alias uk is GB", `{"external_id": "co-3", "country": "uk"}`, "external_id=co-3", `{"country": "GB"}`),
		refused("country: XX rejected", "country", `{"external_id": "co-4", "country": "XX"}`, "external_id=co-4"),
		refused("country: alpha-3 rejected", "country", `{"external_id": "co-5", "country": "FIN"}`, "external_id=co-5"),
		refused("country: EU is no country", "country", `{"external_id": "co-6", "country": "EU"}`, "external_id=co-6"),
		refused("country: number rejected", "country", `{"external_id": "co-7", "country": 246}`, "external_id=co-7"),

		// language: an ISO 639 code or a locale; the base language kept.
		accepted("language: fi", `{"external_id": "la-1", "language": "fi"}`, "external_id=la-1", `{"language": "fi"}`),
		accepted("language: ISO 639-2 fin is fi", `{"external_id": "la-2", "language": "FIN"}`, "external_id=la-2", `{"language": "fi"}`),
		accepted("language: locale en_US is en", `{"external_id": "la-3", "language": "en_US"}`, "external_id=la-3", `{"language": "en"}`),
		accepted("language: locale sv-FI is sv", `{"external_id": "la-4", "language": "sv-FI"}`, "external_id=la-4", `{"language": "sv"}`),
		refused("language: a word rejected", "language", `{"external_id": "la-5", "language": "english"}`, "external_id=la-5"),
		refused("language: unknown code rejected", "language", `{"external_id": "la-6", "language": "zz"}`, "external_id=la-6"),
		refused("language: one letter rejected", "language", `{"external_id": "la-7", "language": "e"}`, "external_id=la-7"),

		// birth_date: YYYY-MM-DD only.
		accepted("birth_date: date kept", `{"external_id": "bd-1", "birth_date": "1980-02-03"}`, "external_id=bd-1", `{"birth_date": "1980-02-03"}`),
		refused("birth_date: impossible day rejected", "birth_date", `{"external_id": "bd-2", "birth_date": "1980-02-30"}`, "external_id=bd-2"),
		refused("birth_date: unpadded rejected", "birth_date", `{"external_id": "bd-3", "birth_date": "1980-2-3"}`, "external_id=bd-3"),
		refused("birth_date: other order rejected", "birth_date", `{"external_id": "bd-4", "birth_date": "03.02.1980"}`, "external_id=bd-4"),
		refused("birth_date: datetime rejected", "birth_date", `{"external_id": "bd-5", "birth_date": "1980-02-03T00:00:00"}`, "external_id=bd-5"),
		refused("birth_date: number rejected", "birth_date", `{"external_id": "bd-6", "birth_date": 19800203}`, "external_id=bd-6"),

		// date_joined, last_login: date or datetime, UTC with Z.
		accepted("datetime: date is midnight", `{"external_id": "dt-1", "date_joined": "2024-05-06"}`, "external_id=dt-1",
			`{"date_joined": "2024-05-06T00:00:00Z"}`),
		accepted("datetime: with T, naive", `{"external_id": "dt-2", "date_joined": "2024-05-06T07:08:09"}`, "external_id=dt-2",
			`{"date_joined": "2024-05-06T07:08:09Z"}`),
		accepted("datetime: with space, naive", `{"external_id": "dt-3", "date_joined": "2024-05-06 07:08:09"}`, "external_id=dt-3",
			`{"date_joined": "2024-05-06T07:08:09Z"}`),
		accepted("datetime: with Z", `{"external_id": "dt-4", "date_joined": "2024-05-06T07:08:09Z"}`, "external_id=dt-4",
			`{"date_joined": "2024-05-06T07:08:09Z"}`),
		accepted("datetime: with +02:00", `{"external_id": "dt-5", "date_joined": "2024-05-06T07:08:09+02:00"}`, "external_id=dt-5",
			`{"date_joined": "2024-05-06T05:08:09Z"}`),
		accepted("datetime: with -05:30 across midnight", `{"external_id": "dt-6", "last_login": "2024-12-31T23:30:00-05:30"}`, "external_id=dt-6",
			`{"last_login": "2025-01-01T05:00:00Z"}`),
		accepted("datetime: space and zone", `{"external_id": "dt-7", "last_login": "2024-05-06 07:08:09+02:00"}`, "external_id=dt-7",
			`{"last_login": "2024-05-06T05:08:09Z"}`),
		accepted("datetime: microseconds kept", `{"external_id": "dt-8", "last_login": "2024-05-06T07:08:09.123456Z"}`, "external_id=dt-8",
			`{"last_login": "2024-05-06T07:08:09.123456Z"}`),
		accepted("datetime: both fields", `{"external_id": "dt-9", "date_joined": "2020-01-02", "last_login": "2024-05-06T07:08:09Z"}`, "external_id=dt-9",
			`{"date_joined": "2020-01-02T00:00:00Z", "last_login": "2024-05-06T07:08:09Z"}`),
		refused("datetime: other order rejected", "date_joined", `{"external_id": "dt-10", "date_joined": "06.05.2024"}`, "external_id=dt-10"),
		refused("datetime: without seconds rejected", "date_joined", `{"external_id": "dt-11", "date_joined": "2024-05-06T07:08"}`, "external_id=dt-11"),
		refused("datetime: hour 25 rejected", "last_login", `{"external_id": "dt-12", "last_login": "2024-05-06T25:00:00"}`, "external_id=dt-12"),
		refused("datetime: a word rejected", "last_login", `{"external_id": "dt-13", "last_login": "yesterday"}`, "external_id=dt-13"),
		refused("datetime: epoch number rejected", "last_login", `{"external_id": "dt-14", "last_login": 1714979289}`, "external_id=dt-14"),

		// Permissions: booleans, also as strings.
		accepted("boolean: JSON true", `{"external_id": "bo-1", "can_email": true, "can_post": true, "can_profile": true, "can_push": true, "can_sms": true}`,
			"external_id=bo-1", `{"can_email": true, "can_post": true, "can_profile": true, "can_push": true, "can_sms": true}`),
		accepted("boolean: JSON false", `{"external_id": "bo-2", "can_email": false, "can_sms": false}`,
			"external_id=bo-2", `{"can_email": false, "can_sms": false}`),
		accepted("boolean: strings any case and 1/0", `{"external_id": "bo-3", "can_email": "TRUE", "can_post": "false", "can_profile": "1", "can_push": "0", "can_sms": 1}`,
			"external_id=bo-3", `{"can_email": true, "can_post": false, "can_profile": true, "can_push": false, "can_sms": true}`),
		refused("boolean: yes rejected", "can_email", `{"external_id": "bo-4", "can_email": "yes"}`, "external_id=bo-4"),
		refused("boolean: 2 rejected", "can_sms", `{"external_id": "bo-5", "can_sms": 2}`, "external_id=bo-5"),
		refused("boolean: list rejected", "can_push", `{"external_id": "bo-6", "can_push": [true]}`, "external_id=bo-6"),

		// Other fields are strings; numbers are kept as their text.
		accepted("string field: number kept as text", `{"external_id": "st-1", "zip_code": 12345, "house_number": 7}`, "external_id=st-1",
			`{"zip_code": "12345", "house_number": "7"}`),
		accepted("string field: every plain field stored", `{"external_id": "st-2", "canonical_id": "g-1", "first_name": "F", "last_name": "L",
			"shop_id": "s-1", "city": "Oulu", "company": "Co", "province": "P", "zip_code": "00100", "vat_number": "FI123", "gender": "other",
			"house_number": "1", "house_number_addition": "B", "street_address": "Main 1 B", "street_name": "Main"}`, "external_id=st-2",
			`{"canonical_id": "g-1", "first_name": "F", "last_name": "L", "shop_id": "s-1", "city": "Oulu", "company": "Co", "province": "P",
			"zip_code": "00100", "vat_number": "FI123", "gender": "other", "house_number": "1", "house_number_addition": "B",
			"street_address": "Main 1 B", "street_name": "Main"}`),
		refused("string field: boolean rejected", "city", `{"external_id": "st-3", "city": true}`, "external_id=st-3"),
		refused("string field: object rejected", "first_name", `{"external_id": "st-4", "first_name": {"given": "Ann"}}`, "external_id=st-4"),

		// The rejection names the first field at fault, in key order.
		refused("first bad field in key order named", "country", `{"external_id": "ko-1", "language": "english", "country": "XX", "email": "nope"}`, "external_id=ko-1"),
	})
}

// longID is an external_id of n characters.
func longID(n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = "abc-123"[i%7]
	}
	return string(b)
}

// TestCustomerRuleCSV: records from CSV carry only strings; booleans,
// lists and dates are read from them, an empty cell is absent (it never
// removes a value), and company fields stay strings.
func TestCustomerRuleCSV(t *testing.T) {
	s := newRuleSuite(t)
	sn := s.acme.ShortName
	s.run(t, ruleVia{host: acmeHost, token: s.admin, csv: true}, []ruleCase{
		accepted("csv booleans: true/false any case and 1/0",
			`{"external_id": "csv-1", "can_email": "true", "can_post": "FALSE", "can_profile": "1", "can_push": "0", "can_sms": "True"}`,
			"external_id=csv-1", `{"can_email": true, "can_post": false, "can_profile": true, "can_push": false, "can_sms": true}`),
		refused("csv booleans: yes rejected", "can_email", `{"external_id": "csv-2", "can_email": "yes"}`, "external_id=csv-2"),
		accepted("csv lists: property-path columns and a single string",
			`{"external_id": "csv-3", "tags.0": "vip", "tags.1": "b2b", "mailing_lists": "weekly"}`,
			"external_id=csv-3", `{"tags": ["b2b", "vip"], "mailing_lists": ["weekly"]}`),
		{name: "csv lists: add and remove columns", rounds: oneByOne(
			okRec(`{"external_id": "csv-4", "tags.0": "a", "tags.1": "b", "mailing_lists": "m0"}`),
			okRec(`{"external_id": "csv-4", "tags.add.0": "c", "tags.remove.0": "a", "mailing_lists.add": "m1", "mailing_lists.remove": "m0"}`),
		), check: expect("external_id=csv-4", `{"tags": ["b", "c"], "mailing_lists": ["m1"]}`)},
		{name: "csv empty cell is absent, not a removal", rounds: oneByOne(
			okRec(`{"external_id": "csv-5", "city": "Oulu", "first_name": "Cee", "can_email": "true"}`),
			okRec(`{"external_id": "csv-5", "city": "", "first_name": "Dee", "can_email": ""}`),
		), check: expect("external_id=csv-5", `{"city": "Oulu", "first_name": "Dee", "can_email": true}`)},
		{name: "csv company field kept as a string", rounds: oneByOne(okRec(`{"external_id": "csv-6", "` + sn + `__tier": "3"}`)),
			check: func(t *testing.T, s *ruleSuite) {
				ruleHas(t, s.one(t, "external_id=csv-6"), `{"`+sn+`__tier": "3"}`)
				s.one(t, sn+"__tier=3")
			}},
		accepted("csv dates and datetimes", `{"external_id": "csv-7", "birth_date": "1980-02-03", "date_joined": "2024-05-06 07:08:09"}`,
			"external_id=csv-7", `{"birth_date": "1980-02-03", "date_joined": "2024-05-06T07:08:09Z"}`),
		accepted("csv phone and email normalised", `{"external_id": "csv-8", "phone_number": "+358 40 100 0008", "email": "CSV.Eight@Example.com", "country": "fi"}`,
			"external_id=csv-8", `{"phone_number": "+358401000008", "email": "csv.eight@example.com", "country": "FI"}`),
		refused("csv identifier required", "", `{"first_name": "csv-nobody"}`, "first_name=csv-nobody"),
		accepted("csv unknown column ignored", `{"external_id": "csv-9", "favourite": "x", "city": "Oulu"}`, "external_id=csv-9", `{"city": "Oulu"}`),
		refused("csv invalid value rejected", "phone_number", `{"external_id": "csv-10", "phone_number": "0401000010"}`, "external_id=csv-10"),
	})
}

// TestCustomerRuleTimezone: datetimes without a zone are read in the
// company's timezone (Europe/Helsinki: +03:00 in summer, +02:00 in
// winter), a date is midnight there; datetimes with a zone and birth
// dates are not shifted. The company's own short name prefixes its
// fields; acme's is another company's.
func TestCustomerRuleTimezone(t *testing.T) {
	s := newRuleSuite(t)
	ctx := context.Background()
	co, err := s.cmds.CreateCompany.Handle(ctx, commands.CreateCompany{Principal: access.System(""), Slug: "nordic",
		Settings: company.Settings{Name: "Nordic", Timezone: "Europe/Helsinki"}})
	if err != nil {
		t.Fatal(err)
	}
	const nordicHost = "nordic.localhost"
	u := s.mustUser(ctx, co, "admin@nordic.test", access.RoleAdmin, false)
	token := s.userToken(u, nordicHost)
	find := func(filter, want string) func(*testing.T, *ruleSuite) {
		return func(t *testing.T, s *ruleSuite) {
			got := s.findAt(t, nordicHost, token, filter)
			if len(got) != 1 {
				t.Fatalf("%s: %v, want one customer", filter, got)
			}
			ruleHas(t, got[0], want)
		}
	}
	naive := func(name, body, filter, want string) ruleCase {
		return ruleCase{name: name, rounds: oneByOne(okRec(body)), check: find(filter, want)}
	}
	s.run(t, ruleVia{host: nordicHost, token: token}, []ruleCase{
		naive("naive datetime in summer time", `{"external_id": "tz-1", "date_joined": "2024-05-06T07:08:09"}`, "external_id=tz-1",
			`{"date_joined": "2024-05-06T04:08:09Z"}`),
		naive("naive datetime with space in winter time", `{"external_id": "tz-2", "date_joined": "2024-01-15 12:00:00"}`, "external_id=tz-2",
			`{"date_joined": "2024-01-15T10:00:00Z"}`),
		naive("date is midnight in the company's timezone", `{"external_id": "tz-3", "date_joined": "2024-05-06"}`, "external_id=tz-3",
			`{"date_joined": "2024-05-05T21:00:00Z"}`),
		naive("naive last_login", `{"external_id": "tz-4", "last_login": "2024-12-31T23:30:00.5"}`, "external_id=tz-4",
			`{"last_login": "2024-12-31T21:30:00.5Z"}`),
		naive("Z is not shifted", `{"external_id": "tz-5", "date_joined": "2024-05-06T07:08:09Z"}`, "external_id=tz-5",
			`{"date_joined": "2024-05-06T07:08:09Z"}`),
		naive("explicit +02:00 is not the company's", `{"external_id": "tz-6", "last_login": "2024-05-06T07:08:09+02:00"}`, "external_id=tz-6",
			`{"last_login": "2024-05-06T05:08:09Z"}`),
		naive("birth_date is not shifted", `{"external_id": "tz-7", "birth_date": "1980-02-03"}`, "external_id=tz-7",
			`{"birth_date": "1980-02-03"}`),
		naive("own company field", `{"external_id": "tz-8", "`+co.ShortName+`__region": "north"}`, co.ShortName+"__region=north",
			`{"external_id": "tz-8"}`),
		{name: "another company's prefix ignored", rounds: oneByOne(okRec(
			`{"external_id": "tz-9", "` + s.acme.ShortName + `__region": "north"}`)),
			check: func(t *testing.T, s *ruleSuite) {
				got := s.findAt(t, nordicHost, token, "external_id=tz-9")
				if len(got) != 1 {
					t.Fatalf("external_id=tz-9: %v, want one customer", got)
				}
				ruleLacks(t, got[0], s.acme.ShortName+"__region", co.ShortName+"__region")
			}},
	})
}
