package systemtest_test

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestCustomerRuleDeleteAndForget: is_deleted removes the customer from
// retrieval for good, is_forgotten anonymises it for good; neither can be
// undone by later records (docs/customers.md, Deletion and forgetting).
func TestCustomerRuleDeleteAndForget(t *testing.T) {
	s := newRuleSuite(t)

	// The customers, and their ids (a deleted customer is not retrievable).
	ids := map[string]string{}
	names := []string{"del-1", "del-2", "del-3", "del-4", "del-5", "del-6", "del-7", "fgt-1", "fgt-2", "fgt-3", "fgt-4"}
	var people []ruleRec
	for _, name := range names {
		people = append(people, okRec(fmt.Sprintf(`{"external_id": %q, "email": "%[1]s@example.com", "phone_number": %q,
			"first_name": "First-%[1]s", "last_name": "Last-%[1]s", "street_address": "Street-%[1]s 1", "tags": ["tag-%[1]s"]}`,
			name, phoneOf(name))))
	}
	s.run(t, s.acmeJSON(), []ruleCase{{name: "setup", rounds: [][]ruleRec{people}, check: func(t *testing.T, s *ruleSuite) {
		for _, name := range names {
			ids[name] = idOf(t, s.one(t, "external_id="+name, "phone_number="+phoneOf(name)))
		}
	}}})
	if t.Failed() {
		t.FailNow()
	}

	// gone checks that nothing of the customer is retrievable.
	gone := func(t *testing.T, s *ruleSuite, name string) {
		t.Helper()
		noneFound("id="+ids[name], "external_id="+name, "email="+name+"@example.com", "phone_number="+phoneOf(name),
			"first_name=First-"+name, "tags=tag-"+name)(t, s)
	}
	// events checks the types of the customer's events.
	events := func(t *testing.T, s *ruleSuite, name string, want ...string) ruleHistory {
		t.Helper()
		h, _ := s.history(t, ids[name])
		var got []string
		for _, e := range h.Events {
			got = append(got, e.Type)
		}
		if !slices.Equal(got, want) {
			t.Errorf("events %v, want %v", got, want)
		}
		return h
	}
	// anonymised checks that the customer is retrieved by id as forgotten,
	// with nothing else, and found by nothing else.
	anonymised := func(t *testing.T, s *ruleSuite, name string) {
		t.Helper()
		want := []map[string]any{{"id": ids[name], "is_deleted": false, "is_forgotten": true}}
		if diff := cmp.Diff(want, s.find(t, "id="+ids[name])); diff != "" {
			t.Errorf("forgotten customer (-want +got):\n%s", diff)
		}
		noneFound("external_id="+name, "email="+name+"@example.com", "phone_number="+phoneOf(name), "first_name=First-"+name)(t, s)
	}
	const (
		upserted  = "CustomerUpserted"
		deleted   = "CustomerDeleted"
		forgotten = "CustomerForgotten"
		wasDel    = "customer was deleted; deletion is irreversible"
		wasFgt    = "customer was forgotten"
	)

	s.run(t, s.acmeJSON(), []ruleCase{
		{name: "is_deleted removes the customer from retrieval, other fields not applied", rounds: oneByOne(
			okRec(`{"external_id": "del-1", "is_deleted": true, "city": "Secretcity"}`),
		), check: func(t *testing.T, s *ruleSuite) {
			gone(t, s, "del-1")
			noneFound("city=Secretcity")(t, s)
			h := events(t, s, "del-1", upserted, deleted)
			if !h.IsDeleted || h.IsForgotten {
				t.Errorf("history says deleted %v, forgotten %v", h.IsDeleted, h.IsForgotten)
			}
		}},
		{name: "deleted: a later is_deleted false is rejected", rounds: oneByOne(
			okRec(`{"external_id": "del-2", "is_deleted": true}`),
			badRecFor("is_deleted", wasDel, `{"external_id": "del-2", "is_deleted": false, "first_name": "Back-2"}`),
			badRecFor("is_deleted", wasDel, `{"external_id": "del-2", "is_deleted": "false", "city": "Back-2"}`),
		), check: func(t *testing.T, s *ruleSuite) {
			gone(t, s, "del-2")
			noneFound("first_name=Back-2", "city=Back-2")(t, s)
			events(t, s, "del-2", upserted, deleted)
		}},
		{name: "deleted: a later record without the flag is rejected, by any identity", rounds: [][]ruleRec{
			{okRec(`{"external_id": "del-3", "is_deleted": true}`)},
			{
				badRecFor("is_deleted", wasDel, `{"external_id": "del-3", "first_name": "Back-3"}`),
				badRecFor("is_deleted", wasDel, `{"email": "del-3@example.com", "first_name": "Back-3"}`),
				badRecFor("is_deleted", wasDel, `{"phone_number": "`+phoneOf("del-3")+`", "first_name": "Back-3"}`),
			},
		}, check: func(t *testing.T, s *ruleSuite) {
			gone(t, s, "del-3")
			noneFound("first_name=Back-3")(t, s)
			events(t, s, "del-3", upserted, deleted)
		}},
		{name: "deleted: a repeated is_deleted is accepted without effect", rounds: oneByOne(
			okRec(`{"external_id": "del-4", "is_deleted": true}`),
			okRec(`{"external_id": "del-4", "is_deleted": true}`),
			okRec(`{"email": "del-4@example.com", "is_deleted": "true"}`),
		), check: func(t *testing.T, s *ruleSuite) {
			gone(t, s, "del-4")
			events(t, s, "del-4", upserted, deleted)
		}},
		{name: "deleted: a new external_id with the deleted customer's email is another customer", rounds: oneByOne(
			okRec(`{"external_id": "del-5", "is_deleted": true}`),
			okRec(`{"external_id": "del-5-new", "email": "del-5@example.com", "city": "New"}`),
		), check: func(t *testing.T, s *ruleSuite) {
			c := s.one(t, "email=del-5@example.com")
			ruleHas(t, c, `{"external_id": "del-5-new", "city": "New"}`)
			ruleLacks(t, c, "first_name", "last_name", "phone_number")
			if c["id"] == ids["del-5"] {
				t.Error("the deleted customer came back")
			}
			events(t, s, "del-5", upserted, deleted)
		}},
		{name: "deleted: can still be forgotten, and stays out of retrieval", rounds: oneByOne(
			okRec(`{"external_id": "del-6", "is_deleted": true}`),
			okRec(`{"external_id": "del-6", "is_forgotten": true}`),
		), check: func(t *testing.T, s *ruleSuite) {
			gone(t, s, "del-6")
			if h := events(t, s, "del-6", upserted, deleted, forgotten); !h.IsForgotten {
				t.Error("history: not forgotten")
			}
		}},
		{name: "both flags at once: deleted then forgotten", rounds: oneByOne(
			okRec(`{"external_id": "del-7", "is_deleted": true, "is_forgotten": true}`),
		), check: func(t *testing.T, s *ruleSuite) {
			gone(t, s, "del-7")
			events(t, s, "del-7", upserted, deleted, forgotten)
		}},
		refused("deleting a customer nobody has is rejected", "is_deleted",
			`{"external_id": "del-none", "is_deleted": true}`, "external_id=del-none"),

		{name: "is_forgotten: retrieval shows only id, is_deleted, is_forgotten", rounds: oneByOne(
			okRec(`{"external_id": "fgt-1", "is_forgotten": true, "city": "Secretcity"}`),
		), check: func(t *testing.T, s *ruleSuite) {
			anonymised(t, s, "fgt-1")
			noneFound("city=Secretcity")(t, s)
		}},
		{name: "is_forgotten: history names the fields, without values", rounds: oneByOne(
			okRec(`{"email": "fgt-2@example.com", "is_forgotten": true}`),
		), check: func(t *testing.T, s *ruleSuite) {
			h, body := s.history(t, ids["fgt-2"])
			if !h.IsForgotten || len(h.Events) != 2 || h.Events[0].Type != upserted || h.Events[1].Type != forgotten {
				t.Fatalf("history: %s", body)
			}
			first := h.Events[0]
			if !first.Redacted || first.Changes != nil {
				t.Errorf("first event not redacted: %+v", first)
			}
			for _, f := range []string{"email", "external_id", "first_name", "last_name", "phone_number", "street_address", "tags", "can_email"} {
				if !slices.Contains(first.Fields, f) {
					t.Errorf("fields %v: %s missing", first.Fields, f)
				}
			}
			for _, v := range []string{"fgt-2@example.com", phoneOf("fgt-2"), "First-fgt-2", "Last-fgt-2", "Street-fgt-2", "tag-fgt-2", `"fgt-2"`} {
				if strings.Contains(body, v) {
					t.Errorf("history holds %q: %s", v, body)
				}
			}
		}},
		{name: "is_forgotten: a later record with the person's email, phone or external_id does not recreate it", rounds: [][]ruleRec{
			{okRec(`{"phone_number": "` + phoneOf("fgt-3") + `", "is_forgotten": true}`)},
			{
				badRecFor("email", wasFgt, `{"email": "fgt-3@example.com", "first_name": "Again-3"}`),
				badRecFor("email", wasFgt, `{"email": "FGT-3@Example.com", "first_name": "Again-3"}`),
				badRecFor("phone_number", wasFgt, `{"phone_number": "`+phoneOf("fgt-3")+`", "first_name": "Again-3"}`),
				badRecFor("external_id", wasFgt, `{"external_id": "fgt-3", "first_name": "Again-3"}`),
				badRecFor("email", wasFgt, `{"external_id": "fgt-3-new", "email": "fgt-3@example.com", "first_name": "Again-3"}`),
				badRecFor("phone_number", wasFgt, `{"email": "fgt-3-new@example.com", "phone_number": "`+phoneOf("fgt-3")+`", "first_name": "Again-3"}`),
				badRecFor("external_id", wasFgt, `{"external_id": "fgt-3", "is_deleted": true}`),
			},
		}, check: func(t *testing.T, s *ruleSuite) {
			anonymised(t, s, "fgt-3")
			noneFound("first_name=Again-3", "external_id=fgt-3-new", "email=fgt-3-new@example.com")(t, s)
			events(t, s, "fgt-3", upserted, forgotten)
		}},
		{name: "is_forgotten: repeated is accepted without effect", rounds: oneByOne(
			okRec(`{"external_id": "fgt-4", "is_forgotten": true}`),
			okRec(`{"external_id": "fgt-4", "is_forgotten": true}`),
			okRec(`{"email": "fgt-4@example.com", "is_forgotten": "true"}`),
		), check: func(t *testing.T, s *ruleSuite) {
			anonymised(t, s, "fgt-4")
			events(t, s, "fgt-4", upserted, forgotten)
		}},
		refused("forgetting a customer nobody has is rejected", "is_forgotten",
			`{"email": "fgt-none@example.com", "is_forgotten": true}`, "email=fgt-none@example.com"),
	})
}

// phoneOf is the phone number of the test customer "del-<n>" or "fgt-<n>".
func phoneOf(name string) string {
	kind, n, _ := strings.Cut(name, "-")
	i, _ := strconv.Atoi(n)
	return fmt.Sprintf("+35840100%s%03d", map[string]string{"del": "1", "fgt": "2"}[kind], i)
}
