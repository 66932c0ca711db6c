package systemtest_test

import (
	"testing"
)

// TestCustomerRuleIdentity: which customer a record is (docs/customers.md,
// Identity): by external_id, else email, else phone number; a new
// external_id adopts a customer without one; the customer found takes
// every identity the record gives; a changed or removed identity is
// freed; records of one upload see the ones before them; canonical_id
// never merges.
func TestCustomerRuleIdentity(t *testing.T) {
	s := newRuleSuite(t)
	// count is a check: n customers match the filters.
	count := func(t *testing.T, s *ruleSuite, n int, filters ...string) []map[string]any {
		t.Helper()
		got := s.find(t, filters...)
		if len(got) != n {
			t.Errorf("%v: %d customers, want %d: %v", filters, len(got), n, got)
		}
		return got
	}
	s.run(t, s.acmeJSON(), []ruleCase{
		{name: "matched by external_id", rounds: oneByOne(
			okRec(`{"external_id": "i-1", "email": "i1-old@example.com", "first_name": "A-1"}`),
			okRec(`{"external_id": "i-1", "email": "i1-new@example.com", "last_name": "L"}`),
		), check: func(t *testing.T, s *ruleSuite) {
			ruleHas(t, s.one(t, "external_id=i-1"), `{"email": "i1-new@example.com", "first_name": "A-1", "last_name": "L"}`)
			count(t, s, 0, "email=i1-old@example.com")
		}},
		{name: "matched by email without external_id, in any case", rounds: oneByOne(
			okRec(`{"email": "i2@example.com", "first_name": "A-2"}`),
			okRec(`{"email": "I2@Example.COM", "last_name": "L"}`),
		), check: expect("email=i2@example.com", `{"first_name": "A-2", "last_name": "L"}`)},
		{name: "matched by phone without external_id or email, in any format", rounds: oneByOne(
			okRec(`{"phone_number": "+358401002003", "first_name": "A-3"}`),
			okRec(`{"phone_number": "+358 (40) 100 2003", "last_name": "L"}`),
		), check: expect("phone_number=+358401002003", `{"first_name": "A-3", "last_name": "L"}`)},
		{name: "external_id matched exactly, case kept", rounds: oneByOne(
			okRec(`{"external_id": "Case-4", "first_name": "Upper"}`),
			okRec(`{"external_id": "case-4", "first_name": "Lower"}`),
		), check: func(t *testing.T, s *ruleSuite) {
			ruleHas(t, s.one(t, "external_id=Case-4"), `{"first_name": "Upper"}`)
			ruleHas(t, s.one(t, "external_id=case-4"), `{"first_name": "Lower"}`)
		}},
		{name: "external_id before email: A found, the email moves to A", rounds: [][]ruleRec{
			{okRec(`{"external_id": "i-5", "first_name": "A-5"}`), okRec(`{"email": "i5@example.com", "first_name": "B-5"}`)},
			{okRec(`{"external_id": "i-5", "email": "i5@example.com", "last_name": "L"}`)},
			{okRec(`{"email": "i5@example.com", "city": "Later"}`)},
		}, check: func(t *testing.T, s *ruleSuite) {
			ruleHas(t, s.one(t, "first_name=A-5"), `{"external_id": "i-5", "email": "i5@example.com", "last_name": "L", "city": "Later"}`)
			b := s.one(t, "first_name=B-5")
			ruleHas(t, b, `{"email": "i5@example.com"}`) // B keeps its stored field
			ruleLacks(t, b, "external_id", "last_name", "city")
		}},
		{name: "email matches A, phone matches B: A updated, later phone-only record finds A", rounds: [][]ruleRec{
			{okRec(`{"email": "i6@example.com", "first_name": "A-6"}`), okRec(`{"phone_number": "+358401002006", "first_name": "B-6"}`)},
			{okRec(`{"email": "i6@example.com", "phone_number": "+358401002006", "last_name": "L"}`)},
			{okRec(`{"phone_number": "+358401002006", "city": "Later"}`)},
		}, check: func(t *testing.T, s *ruleSuite) {
			ruleHas(t, s.one(t, "first_name=A-6"), `{"email": "i6@example.com", "phone_number": "+358401002006", "last_name": "L", "city": "Later"}`)
			b := s.one(t, "first_name=B-6")
			ruleHas(t, b, `{"phone_number": "+358401002006"}`)
			ruleLacks(t, b, "email", "last_name", "city")
			count(t, s, 2, "phone_number=+358401002006")
		}},
		{name: "a new external_id adopts an email-only customer", rounds: oneByOne(
			okRec(`{"email": "i7@example.com", "first_name": "A-7"}`),
			okRec(`{"external_id": "i-7", "email": "i7@example.com", "last_name": "L"}`),
			okRec(`{"external_id": "i-7", "city": "Later"}`),
		), check: func(t *testing.T, s *ruleSuite) {
			ruleHas(t, s.one(t, "email=i7@example.com"), `{"external_id": "i-7", "first_name": "A-7", "last_name": "L", "city": "Later"}`)
		}},
		{name: "a new external_id adopts a phone-only customer", rounds: oneByOne(
			okRec(`{"phone_number": "+358401002008", "first_name": "A-8"}`),
			okRec(`{"external_id": "i-8", "phone_number": "+358401002008", "last_name": "L"}`),
		), check: expect("phone_number=+358401002008", `{"external_id": "i-8", "first_name": "A-8", "last_name": "L"}`)},
		{name: "adoption takes the email's customer before the phone's", rounds: [][]ruleRec{
			{okRec(`{"email": "i9@example.com", "first_name": "A-9"}`), okRec(`{"phone_number": "+358401002009", "first_name": "B-9"}`)},
			{okRec(`{"external_id": "i-9", "email": "i9@example.com", "phone_number": "+358401002009"}`)},
			{okRec(`{"phone_number": "+358401002009", "city": "Later"}`)},
		}, check: func(t *testing.T, s *ruleSuite) {
			ruleHas(t, s.one(t, "first_name=A-9"), `{"external_id": "i-9", "phone_number": "+358401002009", "city": "Later"}`)
			ruleLacks(t, s.one(t, "first_name=B-9"), "external_id", "city")
		}},
		{name: "a customer with another external_id is never taken over", rounds: oneByOne(
			okRec(`{"external_id": "i-10a", "email": "i10@example.com", "first_name": "A-10"}`),
			okRec(`{"external_id": "i-10b", "email": "i10@example.com", "first_name": "B-10"}`),
			okRec(`{"email": "i10@example.com", "city": "Later"}`),
		), check: func(t *testing.T, s *ruleSuite) {
			a := s.one(t, "external_id=i-10a")
			ruleHas(t, a, `{"first_name": "A-10", "email": "i10@example.com"}`)
			ruleLacks(t, a, "city")
			// The new customer took the email: the later record is B.
			ruleHas(t, s.one(t, "external_id=i-10b"), `{"first_name": "B-10", "email": "i10@example.com", "city": "Later"}`)
		}},
		{name: "two records of one new person in one upload make one customer", rounds: [][]ruleRec{{
			okRec(`{"external_id": "i-11", "first_name": "A-11"}`),
			okRec(`{"external_id": "i-11", "last_name": "L", "tags.add": "t"}`),
		}}, check: func(t *testing.T, s *ruleSuite) {
			ruleHas(t, s.one(t, "external_id=i-11"), `{"first_name": "A-11", "last_name": "L", "tags": ["t"]}`)
		}},
		{name: "records of one upload linked by email then phone make one customer", rounds: [][]ruleRec{{
			okRec(`{"email": "i12@example.com", "first_name": "A-12"}`),
			okRec(`{"email": "i12@example.com", "phone_number": "+358401002012", "last_name": "L"}`),
			okRec(`{"phone_number": "+358401002012", "city": "C"}`),
			okRec(`{"external_id": "i-12", "phone_number": "+358401002012"}`),
		}}, check: func(t *testing.T, s *ruleSuite) {
			ruleHas(t, s.one(t, "phone_number=+358401002012"), `{"external_id": "i-12", "email": "i12@example.com", "first_name": "A-12",
				"last_name": "L", "city": "C"}`)
		}},
		{name: "canonical_id stored, never merges", rounds: [][]ruleRec{
			{
				okRec(`{"external_id": "i-13a", "canonical_id": "g-13", "email": "i13a@example.com"}`),
				okRec(`{"external_id": "i-13b", "canonical_id": "g-13", "email": "i13b@example.com"}`),
				okRec(`{"external_id": "i-13c", "canonical_id": "i-13a"}`),
			},
			{okRec(`{"external_id": "i-13a", "first_name": "Only-A"}`)},
		}, check: func(t *testing.T, s *ruleSuite) {
			group := count(t, s, 2, "canonical_id=g-13")
			if len(group) == 2 && group[0]["id"] == group[1]["id"] {
				t.Errorf("one customer twice: %v", group)
			}
			count(t, s, 1, "first_name=Only-A")
			ruleHas(t, s.one(t, "external_id=i-13b"), `{"canonical_id": "g-13", "email": "i13b@example.com"}`)
			ruleLacks(t, s.one(t, "external_id=i-13c"), "email", "first_name")
		}},
		{name: "a changed email frees the old one", rounds: oneByOne(
			okRec(`{"external_id": "i-14", "email": "i14-old@example.com"}`),
			okRec(`{"external_id": "i-14", "email": "i14-new@example.com"}`),
			okRec(`{"email": "i14-old@example.com", "first_name": "Someone-else"}`),
		), check: func(t *testing.T, s *ruleSuite) {
			c := s.one(t, "external_id=i-14")
			ruleHas(t, c, `{"email": "i14-new@example.com"}`)
			ruleLacks(t, c, "first_name")
			ruleLacks(t, s.one(t, "email=i14-old@example.com"), "external_id")
		}},
		{name: "a phone removed with an empty string is freed", rounds: oneByOne(
			okRec(`{"external_id": "i-15", "phone_number": "+358401002015"}`),
			okRec(`{"external_id": "i-15", "phone_number": ""}`),
			okRec(`{"phone_number": "+358401002015", "first_name": "Someone-else"}`),
		), check: func(t *testing.T, s *ruleSuite) {
			ruleLacks(t, s.one(t, "external_id=i-15"), "phone_number", "first_name")
			ruleLacks(t, s.one(t, "phone_number=+358401002015"), "external_id")
		}},
	})
}
