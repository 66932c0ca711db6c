package systemtest_test

import (
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/clientele/clientele/commands"
	retrievalproj "github.com/clientele/clientele/projections/retrieval"
)

// annAndBob imports two acme customers and one of globex with the real
// write side, and returns the acme ones' ids.
func annAndBob(e *env) (ann, bob string) {
	e.t.Helper()
	e.importCustomers(e.acme, `{"external_id": "C-1", "email": "Ann@Example.com", "phone_number": "+358 40 1234567",
		"first_name": "Ann", "last_name": "Anderson", "can_email": true, "tags": ["vip", "b2b"], "mailing_lists": "weekly",
		"country": "fi", "date_joined": "2024-05-06T07:08:09+03:00", "birth_date": "1980-02-03", "`+e.acme.ShortName+`__tier": 3}`,
		`{"external_id": "C-2", "email": "bob@example.com", "last_name": "Brown"}`)
	e.importCustomers(e.globex, `{"external_id": "C-1", "last_name": "Anderson"}`)
	admin := e.userToken(e.admin, acmeHost)
	ids := customerIDs(e.retrieve(admin).Customers)
	if len(ids) != 2 {
		e.t.Fatalf("imported customers: %v", ids)
	}
	return ids[0], ids[1]
}

func TestRetrieveCustomers(t *testing.T) {
	e := withCustomers(t)
	admin := e.userToken(e.admin, acmeHost)
	ann, bob := annAndBob(e)

	res := e.do(http.MethodGet, "/api/data/customers/", bearer(admin))
	res.wantStatus(t, http.StatusOK)
	// Tokens are random: the golden file has placeholders.
	tokens := map[any]string{}
	for _, c := range e.retrieve(admin).Customers {
		tokens[c["id"]], _ = c["customer_token"].(string)
	}
	if tokens[ann] == "" || tokens[bob] == "" {
		t.Fatalf("customers without a token: %v", tokens)
	}
	golden(t, "customers", res.body, ann, "<ann_id>", bob, "<bob_id>", tokens[ann], "<ann_token>", tokens[bob], "<bob_token>")
	for _, path := range []string{"/api/data/customers", "/data/customers/", "/data/customers"} {
		if got := e.do(http.MethodGet, path, bearer(admin)); got.status != http.StatusOK || string(got.body) != string(res.body) {
			t.Errorf("%s: %d %s", path, got.status, got.body)
		}
	}

	// An integration's token, without roles, reads customers too.
	in := e.createIntegration(admin, "Shop")
	tok := e.createToken(admin, map[string]any{"owner_id": "integrations/" + in}).AccessToken.Token
	if got := e.retrieve(tok); len(got.Customers) != 2 {
		t.Errorf("integration reads %d customers", len(got.Customers))
	}
}

func TestRetrieveCustomersFilters(t *testing.T) {
	e := withCustomers(t)
	admin := e.userToken(e.admin, acmeHost)
	ann, bob := annAndBob(e)
	tests := []struct {
		name  string
		query string
		want  []string
	}{
		{"string", "last_name=Anderson", []string{ann}},
		{"boolean", "can_email=true", []string{ann}},
		{"false", "can_email=false", []string{bob}},
		{"list contains", "tags=vip", []string{ann}},
		{"company field", e.acme.ShortName + "__tier=3", []string{ann}},
		{"and", "last_name=Anderson&can_email=false", []string{}},
		{"no match", "email=nobody@example.com", []string{}},
		{"reserved parameters", "access-token=" + admin + "&limit=5&last_name=Brown", []string{bob}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q, _ := url.ParseQuery(tt.query)
			var opts []option
			for k := range q {
				opts = append(opts, withQuery(k, q.Get(k)))
			}
			if got := customerIDs(e.retrieve(admin, opts...).Customers); !cmp.Equal(tt.want, got) {
				t.Errorf("ids %v, want %v", got, tt.want)
			}
		})
	}
}

func TestRetrieveCustomersInvalid(t *testing.T) {
	e := withCustomers(t)
	admin := e.userToken(e.admin, acmeHost)
	for _, q := range [][2]string{{"limit", "abc"}, {"limit", "0"}, {"limit", "-1"}, {"limit", "1.5"}, {"limit", "10001"}, {"cursor", "not base64!"}} {
		e.do(http.MethodGet, "/api/data/customers/", bearer(admin), withQuery(q[0], q[1])).wantError(t, http.StatusBadRequest, "invalid_request")
	}
	e.retrieve(admin, withQuery("limit", "10000"))
	e.do(http.MethodGet, "/api/data/customers/").wantError(t, http.StatusUnauthorized, "unauthorized")
}

// TestRetrieveCustomersPaging pages through 250 customers while more are
// added: each is answered exactly once, next_url is absolute and absent
// from the last page.
func TestRetrieveCustomersPaging(t *testing.T) {
	e := withCustomers(t)
	admin := e.userToken(e.admin, acmeHost)
	var records []customerRecord
	for range 250 {
		records = append(records, customerRecord{commands.NewID(), permissions(map[string]any{"last_name": "Page"})})
	}
	e.upsertCustomers(e.acme, records...)

	first := e.retrieve(admin)
	if len(first.Customers) != 100 || !strings.HasPrefix(first.NextURL, "http://"+acmeHost+"/api/data/customers/?cursor=") {
		t.Fatalf("default page: %d customers, next_url %q", len(first.Customers), first.NextURL)
	}
	if got := e.retrieve(admin, withHeader("X-Forwarded-Proto", "https")).NextURL; !strings.HasPrefix(got, "https://"+acmeHost+"/") {
		t.Errorf("behind a TLS proxy, next_url %q", got)
	}

	seen := map[string]int{}
	page := e.retrieve(admin, withQuery("limit", "100"), withQuery("last_name", "Page"))
	for n := 1; ; n++ {
		for _, id := range customerIDs(page.Customers) {
			seen[id]++
		}
		if n == 1 {
			// Created during the paging: later ids, at the end.
			var more []customerRecord
			for range 10 {
				more = append(more, customerRecord{commands.NewID(), permissions(map[string]any{"last_name": "Page"})})
			}
			e.upsertCustomers(e.acme, more...)
		}
		if page.NextURL == "" {
			break
		}
		if n > 3 {
			t.Fatal("more than 3 pages of 100 for 260 customers")
		}
		if !strings.Contains(page.NextURL, "limit=100") || !strings.Contains(page.NextURL, "last_name=Page") {
			t.Errorf("next_url %q lost the query", page.NextURL)
		}
		page = e.follow(admin, page.NextURL)
	}
	for _, r := range records {
		if seen[r.id] != 1 {
			t.Errorf("customer %s answered %d times", r.id, seen[r.id])
		}
	}
	if len(seen) != 260 {
		t.Errorf("%d distinct customers, want 260", len(seen))
	}

	// "from" is accepted as the cursor's name too.
	cursor, _ := url.Parse(first.NextURL)
	if got := e.retrieve(admin, withQuery("from", cursor.Query().Get("cursor"))); customerIDs(got.Customers)[0] != records[100].id {
		t.Errorf("from= starts at %v", customerIDs(got.Customers)[0])
	}
}

func TestRetrieveCustomersDeletedAndForgotten(t *testing.T) {
	e := withCustomers(t)
	admin := e.userToken(e.admin, acmeHost)
	ann, _ := annAndBob(e)
	e.importCustomers(e.acme, `{"external_id": "C-2", "is_deleted": true}`, `{"external_id": "C-1", "is_forgotten": true}`)
	got := e.retrieve(admin).Customers
	want := []map[string]any{{"id": ann, "is_deleted": false, "is_forgotten": true}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("customers (-want +got):\n%s", diff)
	}
}

// TestForgetLeavesNoTrace: after forgetting, with every projection
// rebuilt from the log, no table of the database holds the person's data,
// uploads (JSON and CSV) and their staging included.
func TestForgetLeavesNoTrace(t *testing.T) {
	e := withCustomers(t)
	e.runImports()
	admin := e.userToken(e.admin, acmeHost)
	upload := func(body string, opts ...option) {
		t.Helper()
		run := e.mustUpload(admin, "/api/customers/upload/", append([]option{rawBody(body)}, opts...)...)
		if a, res := e.waitRun(admin, run); a.Import.State != "completed" || a.Import.Rejected != 0 {
			t.Fatalf("run: %s", res.body)
		}
		e.waitProjections()
	}
	personal := []string{"zq-forget-me@example.org", "Xyzzyforgetme", "+358409876543", "Forgetmestreet 12", "Plughforget", "F-XYZZY-1"}
	kept := "keep-me@example.org"
	upload(`[{"external_id": "F-XYZZY-1", "email": "zq-forget-me@example.org", "first_name": "Xyzzyforgetme",
		"phone_number": "+358409876543", "street_address": "Forgetmestreet 12", "tags": ["Plughforget"]},
		{"email": "keep-me@example.org"}]`)
	upload("email;last_name;tags.add.0\nzq-forget-me@example.org;Plughforget;vip\n", withHeader("Content-Type", "text/csv"))
	got := e.retrieve(admin, withQuery("external_id", "F-XYZZY-1")).Customers
	if len(got) != 1 || got[0]["last_name"] != "Plughforget" {
		t.Fatalf("imported: %v", got)
	}
	id := got[0]["id"].(string)
	if found := e.findValues(personal...); len(found) != len(personal) {
		t.Fatalf("before forgetting the search finds only %v: it would miss data", found)
	}

	upload(`[{"external_id": "F-XYZZY-1", "is_forgotten": true}]`)
	e.rebuildAll(retrievalproj.NewCustomers(e.keys))
	if found := e.findValues(personal...); len(found) != 0 {
		t.Errorf("personal data of a forgotten customer found: %v", found)
	}
	if found := e.findValues(kept); len(found[kept]) == 0 {
		t.Error("the other customer's data is gone: the search or the rebuild is wrong")
	}
	got = e.retrieve(admin, withQuery("id", id)).Customers
	if diff := cmp.Diff([]map[string]any{{"id": id, "is_deleted": false, "is_forgotten": true}}, got); diff != "" {
		t.Errorf("forgotten customer (-want +got):\n%s", diff)
	}
}

func TestCustomerHistory(t *testing.T) {
	e := withCustomers(t)
	staff := e.userToken(e.staff, acmeHost)
	ann, _ := annAndBob(e)
	e.importCustomers(e.acme, `{"external_id": "C-1", "first_name": "Anne"}`)

	var h struct {
		CustomerID  string           `json:"customer_id"`
		IsForgotten bool             `json:"is_forgotten"`
		Events      []map[string]any `json:"events"`
	}
	res := e.do(http.MethodGet, "/api/customers/"+ann+"/history/", bearer(staff))
	res.wantStatus(t, http.StatusOK)
	res.decode(t, &h)
	if h.CustomerID != ann || h.IsForgotten || len(h.Events) != 2 {
		t.Fatalf("history: %s", res.body)
	}
	second := h.Events[1]
	for k, v := range map[string]any{"version": 2.0, "type": "CustomerUpserted", "run_id": "run-1", "actor": "tokens/tok-1",
		"source": "api", "correlation_id": "req-1", "redacted": false} {
		if second[k] != v {
			t.Errorf("%s = %v, want %v", k, second[k], v)
		}
	}
	set, _ := second["changes"].(map[string]any)["set"].(map[string]any)
	if !strings.HasSuffix(second["recorded_at"].(string), "Z") || set["first_name"] != "Anne" || !slices.Contains(second["fields"].([]any), "first_name") {
		t.Errorf("second event: %v", second)
	}
	for _, path := range []string{"/api/customers/" + ann + "/history", "/customers/" + ann + "/history/", "/customers/" + ann + "/history"} {
		e.do(http.MethodGet, path, bearer(staff)).wantStatus(t, http.StatusOK)
	}

	// Forgotten: which fields changed, not their values.
	e.importCustomers(e.acme, `{"external_id": "C-1", "is_forgotten": true}`)
	res = e.do(http.MethodGet, "/api/customers/"+ann+"/history/", bearer(staff))
	res.wantStatus(t, http.StatusOK)
	h.Events = nil // decoding into the old maps would merge them
	res.decode(t, &h)
	if !h.IsForgotten || len(h.Events) != 3 || strings.Contains(string(res.body), "Anne") || strings.Contains(string(res.body), "ann@example.com") {
		t.Fatalf("history after forgetting: %s", res.body)
	}
	if ev := h.Events[1]; ev["redacted"] != true || ev["changes"] != nil || !cmp.Equal(ev["fields"], second["fields"]) {
		t.Errorf("second event after forgetting: %v", ev)
	}

	// Another company's customer is not found; history needs the staff role.
	globex := e.userToken(e.globexAd, globexHost)
	e.do(http.MethodGet, "/api/customers/"+ann+"/history/", bearer(globex), host(globexHost)).wantError(t, http.StatusNotFound, "not_found")
	e.do(http.MethodGet, "/api/customers/nope/history/", bearer(staff)).wantError(t, http.StatusNotFound, "not_found")
	admin := e.userToken(e.admin, acmeHost)
	in := e.createIntegration(admin, "Shop")
	tok := e.createToken(admin, map[string]any{"owner_id": "integrations/" + in}).AccessToken.Token
	e.do(http.MethodGet, "/api/customers/"+ann+"/history/", bearer(tok)).wantError(t, http.StatusForbidden, "forbidden")
}
