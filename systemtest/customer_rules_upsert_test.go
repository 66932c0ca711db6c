package systemtest_test

import (
	"strings"
	"testing"
)

// ignored is a case of one record accepted with its known fields (city
// Oulu) and without the fields lacking.
func ignored(name, body, filter string, lacking ...string) ruleCase {
	return ruleCase{name: name, rounds: oneByOne(okRec(body)), check: func(t *testing.T, s *ruleSuite) {
		t.Helper()
		c := s.one(t, filter)
		ruleHas(t, c, `{"city": "Oulu"}`)
		ruleLacks(t, c, lacking...)
	}}
}

// TestCustomerRuleUpsert: a record for a stored customer changes only the
// keys it supplies; "" removes a key, null is absent; lists accept a
// single string and change incrementally; permissions default to false on
// creation only; company fields carry the company's own short name; an
// unknown field is ignored (the run's warnings list it:
// TestUnknownFieldsAreWarnings), and a bad value rejects the whole record.
func TestCustomerRuleUpsert(t *testing.T) {
	s := newRuleSuite(t)
	sn := s.acme.ShortName
	full := `"first_name": "Ann", "last_name": "Anderson", "city": "Oulu", "country": "FI", "can_email": true, "tags": ["a"], "mailing_lists": ["m"]`
	s.run(t, s.acmeJSON(), []ruleCase{
		{name: "only supplied keys change", rounds: oneByOne(
			okRec(`{"external_id": "up-1", `+full+`}`),
			okRec(`{"external_id": "up-1", "city": "Turku"}`),
		), check: expect("external_id=up-1", `{"first_name": "Ann", "last_name": "Anderson", "city": "Turku", "country": "FI",
			"can_email": true, "tags": ["a"], "mailing_lists": ["m"]}`)},
		{name: "empty string removes a key", rounds: oneByOne(
			okRec(`{"external_id": "up-2", `+full+`}`),
			okRec(`{"external_id": "up-2", "city": "", "country": " ", "tags": "", "mailing_lists": ""}`),
		), check: func(t *testing.T, s *ruleSuite) {
			c := s.one(t, "external_id=up-2")
			ruleLacks(t, c, "city", "country")
			ruleHas(t, c, `{"first_name": "Ann", "tags": [], "mailing_lists": []}`)
			if got := s.find(t, "external_id=up-2", "city=Oulu"); len(got) != 0 {
				t.Errorf("found by a removed value: %v", got)
			}
		}},
		{name: "empty string sets a permission false", rounds: oneByOne(
			okRec(`{"external_id": "up-3", "can_email": true, "can_sms": true}`),
			okRec(`{"external_id": "up-3", "can_email": ""}`),
		), check: expect("external_id=up-3", `{"can_email": false, "can_sms": true}`)},
		{name: "null is absent", rounds: oneByOne(
			okRec(`{"external_id": "up-4", `+full+`}`),
			okRec(`{"external_id": "up-4", "first_name": null, "city": null, "tags": null, "mailing_lists": null, "can_email": null,
				"tags.add": null, "`+sn+`__x": null, "last_name": "Brown"}`),
		), check: expect("external_id=up-4", `{"first_name": "Ann", "last_name": "Brown", "city": "Oulu", "can_email": true,
			"tags": ["a"], "mailing_lists": ["m"]}`)},
		{name: "a later value replaces the stored one", rounds: oneByOne(
			okRec(`{"external_id": "up-5", "first_name": "Ann", "email": "up-5-old@example.com"}`),
			okRec(`{"external_id": "up-5", "first_name": "Anne", "email": "up-5-new@example.com"}`),
		), check: expect("external_id=up-5", `{"first_name": "Anne", "email": "up-5-new@example.com"}`)},

		// mailing_lists and tags.
		accepted("lists: a single string is a list of one", `{"external_id": "up-6", "mailing_lists": "weekly", "tags": "vip"}`,
			"external_id=up-6", `{"mailing_lists": ["weekly"], "tags": ["vip"]}`),
		accepted("lists: sets, sorted, without duplicates or empty elements", `{"external_id": "up-7", "tags": ["b", "a", "b", "", 5]}`,
			"tags=5", `{"external_id": "up-7", "tags": ["5", "a", "b"]}`),
		{name: "lists: a list replaces the whole list", rounds: oneByOne(
			okRec(`{"external_id": "up-8", "tags": ["a", "b"], "mailing_lists": ["m1", "m2"]}`),
			okRec(`{"external_id": "up-8", "tags": ["c"], "mailing_lists": "m3"}`),
		), check: expect("external_id=up-8", `{"tags": ["c"], "mailing_lists": ["m3"]}`)},
		{name: "lists: add and remove", rounds: oneByOne(
			okRec(`{"external_id": "up-9", "tags": ["a", "b"], "mailing_lists": ["m1", "m2"]}`),
			okRec(`{"external_id": "up-9", "tags.add": ["c", "b"], "tags.remove": ["a", "zz"], "mailing_lists.add": "m3", "mailing_lists.remove": "m1"}`),
		), check: expect("external_id=up-9", `{"tags": ["b", "c"], "mailing_lists": ["m2", "m3"]}`)},
		{name: "lists: add to a customer without the list", rounds: oneByOne(
			okRec(`{"external_id": "up-10"}`),
			okRec(`{"external_id": "up-10", "tags.add": "new", "mailing_lists.add": ["n1", "n2"], "mailing_lists.remove": "n2"}`),
		), check: expect("external_id=up-10", `{"tags": ["new"], "mailing_lists": ["n1"]}`)},
		{name: "lists: add and remove as an object", rounds: oneByOne(
			okRec(`{"external_id": "up-11", "tags": ["a", "b"]}`),
			okRec(`{"external_id": "up-11", "tags": {"add": ["c"], "remove": "a"}}`),
		), check: expect("external_id=up-11", `{"tags": ["b", "c"]}`)},
		{name: "lists: add to a new customer", rounds: oneByOne(
			okRec(`{"external_id": "up-12", "tags.add": ["x"], "mailing_lists.add": "y"}`),
		), check: expect("external_id=up-12", `{"tags": ["x"], "mailing_lists": ["y"]}`)},
		refused("lists: object element rejected", "tags", `{"external_id": "up-13", "tags": [{"a": 1}]}`, "external_id=up-13"),
		refused("lists: unknown operation rejected", "tags", `{"external_id": "up-14", "tags": {"replace": ["a"]}}`, "external_id=up-14"),

		// Permissions.
		accepted("permissions: the five default to false on creation", `{"external_id": "up-15", "first_name": "New"}`, "external_id=up-15",
			`{"can_email": false, "can_post": false, "can_profile": false, "can_push": false, "can_sms": false}`),
		{name: "permissions: an update without them keeps them", rounds: oneByOne(
			okRec(`{"external_id": "up-16", "can_email": true, "can_post": true, "can_profile": true, "can_push": true, "can_sms": true}`),
			okRec(`{"external_id": "up-16", "first_name": "Kept"}`),
		), check: expect("external_id=up-16", `{"first_name": "Kept", "can_email": true, "can_post": true, "can_profile": true,
			"can_push": true, "can_sms": true}`)},
		{name: "permissions: one changed, the others kept", rounds: oneByOne(
			okRec(`{"external_id": "up-17", "can_email": true, "can_sms": true}`),
			okRec(`{"external_id": "up-17", "can_email": false, "can_post": true}`),
		), check: expect("external_id=up-17", `{"can_email": false, "can_post": true, "can_profile": false, "can_push": false, "can_sms": true}`)},

		// Company fields.
		{name: "company field: own short name kept, retrievable, filterable", rounds: oneByOne(
			okRec(`{"external_id": "up-18", "` + sn + `__tier": 3, "` + sn + `__note": "gold", "` + sn + `__prefs": {"a": [1, 2.5]}, "` + sn + `__ok": true}`),
		), check: func(t *testing.T, s *ruleSuite) {
			ruleHas(t, s.one(t, "external_id=up-18"), `{"`+sn+`__tier": 3, "`+sn+`__note": "gold", "`+sn+`__prefs": {"a": [1, 2.5]}, "`+sn+`__ok": true}`)
			for _, f := range []string{sn + "__tier=3", sn + "__note=gold", sn + "__ok=true"} {
				if got := s.find(t, f); len(got) != 1 || got[0]["external_id"] != "up-18" {
					t.Errorf("filter %s: %v", f, got)
				}
			}
		}},
		accepted("company field: prefix in any case is the company's", `{"external_id": "up-19", "`+strings.ToLower(sn)+`__colour": "red"}`,
			"external_id=up-19", `{"`+sn+`__colour": "red"}`),
		{name: "company field: changed, removed, others kept", rounds: oneByOne(
			okRec(`{"external_id": "up-20", "`+sn+`__a": "1", "`+sn+`__b": "2", "`+sn+`__c": "3"}`),
			okRec(`{"external_id": "up-20", "`+sn+`__a": "one", "`+sn+`__b": ""}`),
		), check: func(t *testing.T, s *ruleSuite) {
			c := s.one(t, "external_id=up-20")
			ruleHas(t, c, `{"`+sn+`__a": "one", "`+sn+`__c": "3"}`)
			ruleLacks(t, c, sn+"__b")
		}},
		ignored("company field: another company's prefix ignored", `{"external_id": "up-21", "city": "Oulu", "`+s.globex.ShortName+`__tier": 3}`,
			"external_id=up-21", s.globex.ShortName+"__tier", sn+"__tier"),
		ignored("company field: without a name after the prefix ignored", `{"external_id": "up-22", "city": "Oulu", "`+sn+`__": 1}`,
			"external_id=up-22", sn+"__"),
		ignored("unknown field ignored", `{"external_id": "up-23", "city": "Oulu", "favourite_colour": "red"}`, "external_id=up-23", "favourite_colour"),
		ignored("misspelt field ignored", `{"external_id": "up-24", "city": "Oulu", "firstname": "Ann"}`, "external_id=up-24", "firstname", "first_name"),

		// A rejected update changes nothing.
		{name: "a bad value rejects the whole update", rounds: oneByOne(
			okRec(`{"external_id": "up-25", "city": "Oulu", "tags": ["a"]}`),
			badRec("country", `{"external_id": "up-25", "city": "Turku", "tags.add": "b", "country": "XX"}`),
		), check: expect("external_id=up-25", `{"city": "Oulu", "tags": ["a"]}`)},
		{name: "an unknown field does not stop the update", rounds: oneByOne(
			okRec(`{"external_id": "up-26", "city": "Oulu"}`),
			okRec(`{"external_id": "up-26", "city": "Turku", "OTHER__x": 1}`),
		), check: func(t *testing.T, s *ruleSuite) {
			c := s.one(t, "external_id=up-26")
			ruleHas(t, c, `{"city": "Turku"}`)
			ruleLacks(t, c, "OTHER__x")
		}},
	})
}
