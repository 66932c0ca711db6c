package systemtest_test

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestCustomerRuleAttribution: every change is an event attributed to its
// run, its actor (the token that uploaded) and its source ("api" for any
// HTTP upload, JSON or CSV), as the customer's history shows.
func TestCustomerRuleAttribution(t *testing.T) {
	s := newRuleSuite(t)
	in := s.createIntegration(s.admin, "Shop")
	other := s.createToken(s.admin, map[string]any{"owner_id": "integrations/" + in}).AccessToken

	// upload uploads one record and fails unless it is accepted.
	upload := func(via ruleVia, round int, body string) string {
		t.Helper()
		run, rejections := s.upload(t, via, round, []string{body})
		if len(rejections) != 0 {
			t.Fatalf("%s rejected: %v", body, rejections)
		}
		return run
	}
	admin := s.acmeJSON()
	runs := []string{
		upload(admin, 0, `{"external_id": "att-1", "email": "att-1@example.com", "first_name": "Ann"}`),
		upload(ruleVia{host: acmeHost, token: s.admin, csv: true}, 0, `{"external_id": "att-1", "city": "Oulu"}`),
		upload(ruleVia{host: acmeHost, token: other.Token}, 1, `{"email": "att-1@example.com", "tags.add": "vip"}`),
	}
	s.waitProjections()
	id := idOf(t, s.one(t, "external_id=att-1"))
	runs = append(runs, upload(admin, 1, `{"external_id": "att-1", "is_deleted": true}`))
	if distinct := slices.Compact(slices.Sorted(slices.Values(runs))); len(distinct) != len(runs) {
		t.Fatalf("run ids %v", runs)
	}

	h, body := s.history(t, id)
	type entry struct {
		Type, RunID, Actor, Source string
		Fields                     []string
	}
	var got []entry
	for _, e := range h.Events {
		got = append(got, entry{e.Type, e.RunID, e.Actor, e.Source, e.Fields})
	}
	adminActor, otherActor := "tokens/"+s.adminID, "tokens/"+other.ID
	tests := []struct {
		name string
		want entry
	}{
		{"JSON upload: its run, the admin's token, api", entry{"CustomerUpserted", runs[0], adminActor, "api",
			[]string{"can_email", "can_post", "can_profile", "can_push", "can_sms", "customer_token", "email", "external_id", "first_name"}}},
		{"CSV upload: its run, the admin's token, api", entry{"CustomerUpserted", runs[1], adminActor, "api", []string{"city", "external_id"}}},
		{"another token: its run, that token, api", entry{"CustomerUpserted", runs[2], otherActor, "api", []string{"email", "tags"}}},
		{"deletion: its run, the admin's token, api", entry{"CustomerDeleted", runs[3], adminActor, "api", []string{"is_deleted"}}},
	}
	if len(got) != len(tests) {
		t.Fatalf("history: %s", body)
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, got[i]); diff != "" {
				t.Errorf("event %d (-want +got):\n%s", i+1, diff)
			}
		})
	}
	t.Run("the changes are in the history with their values", func(t *testing.T) {
		if c := h.Events[1].Changes; c == nil || c.Set["city"] != "Oulu" {
			t.Errorf("CSV event changes: %+v", c)
		}
		if c := h.Events[2].Changes; c == nil || !cmp.Equal(c.Add["tags"], []string{"vip"}) {
			t.Errorf("tags.add event changes: %+v", c)
		}
	})
}

// TestCustomerRuleGoodAndBad: bad records never block good ones. One
// upload of 1,100 records (more than one chunk) imports every good one and
// reports each bad one with its index in the upload and its field.
func TestCustomerRuleGoodAndBad(t *testing.T) {
	s := newRuleSuite(t)
	bad := []struct {
		name  string
		index int
		field string
		body  string
	}{
		{"first record, no identifier", 0, "", `{"last_name": "Mixed"}`},
		{"bad email", 3, "email", `{"email": "mixed-3", "last_name": "Mixed"}`},
		{"bad value between two good records of one person", 11, "country", `{"external_id": "mix-10", "country": "XX", "last_name": "Mixed"}`},
		{"bad value beside an unknown field at the end of the first chunk", 999, "can_sms", `{"external_id": "mix-999", "nickname": "x", "can_sms": "perhaps", "last_name": "Mixed"}`},
		{"bad phone at the start of the second chunk", 1000, "phone_number", `{"external_id": "mix-1000", "phone_number": "040", "last_name": "Mixed"}`},
		{"bad value beside another company's field", 1050, "last_login", `{"external_id": "mix-1050", "` + s.globex.ShortName + `__x": 1, "last_login": "yesterday", "last_name": "Mixed"}`},
		{"last record, bad date", 1099, "birth_date", `{"external_id": "mix-1099", "birth_date": "1999-99-99", "last_name": "Mixed"}`},
	}
	const n = 1100
	bodies := make([]string, n)
	for i := range bodies {
		bodies[i] = fmt.Sprintf(`{"external_id": "mix-%d", "email": "mix-%[1]d@example.com", "last_name": "Mixed"}`, i)
	}
	bodies[10] = `{"external_id": "mix-10", "first_name": "Before", "last_name": "Mixed"}`
	bodies[12] = `{"external_id": "mix-10", "city": "After", "last_name": "Mixed"}`
	for _, b := range bad {
		bodies[b.index] = b.body
	}
	_, rejections := s.upload(t, s.acmeJSON(), 1, bodies)
	s.waitProjections()
	for _, b := range bad {
		t.Run(b.name, func(t *testing.T) {
			if r, ok := rejections[b.index]; !ok || r.field != b.field || r.reason == "" {
				t.Errorf("rejection %d: %+v (found %v), want field %q", b.index, r, ok, b.field)
			}
		})
	}
	t.Run("no other rejection", func(t *testing.T) {
		if len(rejections) != len(bad) {
			t.Errorf("%d rejections, want %d: %v", len(rejections), len(bad), rejections)
		}
	})
	t.Run("every good record imported", func(t *testing.T) {
		// Record 12 is mix-10's (as 11, a bad one); the bad ones are none.
		if got := s.find(t, "last_name=Mixed"); len(got) != n-len(bad)-1 {
			t.Errorf("%d customers imported, want %d", len(got), n-len(bad)-1)
		}
		for _, i := range []int{1, 2, 4, 998, 1001, 1049, 1051, 1098} {
			ruleHas(t, s.one(t, fmt.Sprintf("external_id=mix-%d", i)), fmt.Sprintf(`{"email": "mix-%d@example.com"}`, i))
		}
		c := s.one(t, "external_id=mix-10")
		ruleHas(t, c, `{"first_name": "Before", "city": "After"}`)
		ruleLacks(t, c, "country")
	})

	t.Run("CSV: good rows imported, bad rows reported by index", func(t *testing.T) {
		_, rejections := s.upload(t, ruleVia{host: acmeHost, token: s.admin, csv: true}, 0, []string{
			`{"external_id": "mixcsv-0", "can_email": "true"}`,
			`{"external_id": "mixcsv-1", "can_email": "maybe"}`,
			`{"external_id": "mixcsv-2", "country": "fi"}`,
			`{"country": "fi"}`,
			`{"external_id": "mixcsv-4"}`,
		})
		s.waitProjections()
		want := map[int]ruleRejection{1: {field: "can_email"}, 3: {}}
		for i, r := range rejections {
			if w, ok := want[i]; !ok || w.field != r.field {
				t.Errorf("rejection %d: %v", i, r)
			}
		}
		if len(rejections) != len(want) {
			t.Errorf("rejections %v, want indexes 1 and 3", rejections)
		}
		for _, id := range []string{"mixcsv-0", "mixcsv-2", "mixcsv-4"} {
			s.one(t, "external_id="+id)
		}
		noneFound("external_id=mixcsv-1")(t, s)
	})
}

// TestCustomerRuleTenancy: customers are their company's own. Another
// company's token sees none of them, identities are per company, and a
// token is refused at another company's host.
func TestCustomerRuleTenancy(t *testing.T) {
	s := newRuleSuite(t)
	globex := s.userToken(s.globexAd, globexHost)
	acmeRecs := []string{
		`{"external_id": "ten-1", "email": "ten-1@example.com", "phone_number": "+358401009001", "first_name": "Acme-1", "tags": "shared"}`,
		`{"external_id": "ten-2", "first_name": "Acme-2", "tags": "shared"}`,
	}
	if _, rj := s.upload(t, s.acmeJSON(), 0, acmeRecs); len(rj) != 0 {
		t.Fatalf("acme rejections %v", rj)
	}
	// The same identities at globex: another customer, not acme's.
	if _, rj := s.upload(t, ruleVia{host: globexHost, token: globex}, 1, []string{
		`{"external_id": "ten-1", "email": "ten-1@example.com", "phone_number": "+358401009001", "first_name": "Globex-1"}`,
	}); len(rj) != 0 {
		t.Fatalf("globex rejections %v", rj)
	}
	s.waitProjections()
	acme := s.find(t)
	if len(acme) != 2 {
		t.Fatalf("acme customers: %v", acme)
	}
	acmeIDs := customerIDs(acme)

	tests := []struct {
		name    string
		filters []string
		want    []string // first names globex reads
	}{
		{"all customers", nil, []string{"Globex-1"}},
		{"by external_id", []string{"external_id=ten-1"}, []string{"Globex-1"}},
		{"by email", []string{"email=ten-1@example.com"}, []string{"Globex-1"}},
		{"by phone", []string{"phone_number=+358401009001"}, []string{"Globex-1"}},
		{"acme's only", []string{"external_id=ten-2"}, nil},
		{"acme's tag", []string{"tags=shared"}, nil},
		{"acme's id", []string{"id=" + acmeIDs[0]}, nil},
	}
	for _, tt := range tests {
		t.Run("globex retrieval: "+tt.name, func(t *testing.T) {
			var names []string
			for _, c := range s.findAt(t, globexHost, globex, tt.filters...) {
				names = append(names, fmt.Sprint(c["first_name"]))
				if slices.Contains(acmeIDs, c["id"].(string)) {
					t.Errorf("acme's customer at globex: %v", c)
				}
			}
			if !slices.Equal(names, tt.want) {
				t.Errorf("first names %v, want %v", names, tt.want)
			}
		})
	}
	t.Run("acme's customer unchanged by globex's record", func(t *testing.T) {
		ruleHas(t, s.one(t, "external_id=ten-1"), `{"first_name": "Acme-1", "email": "ten-1@example.com"}`)
	})
	t.Run("a token is refused at another company's host", func(t *testing.T) {
		for _, c := range []struct{ token, host string }{{globex, acmeHost}, {s.admin, globexHost}} {
			res := s.do(http.MethodGet, "/api/data/customers/", bearer(c.token), host(c.host))
			if res.status != http.StatusUnauthorized && res.status != http.StatusForbidden {
				t.Errorf("at %s: %d %s", c.host, res.status, res.body)
			}
			if strings.Contains(string(res.body), "Acme-") || strings.Contains(string(res.body), "Globex-") {
				t.Errorf("at %s: %s", c.host, res.body)
			}
		}
	})
}
