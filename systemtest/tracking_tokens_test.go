package systemtest_test

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/clientele/clientele/commands/imports"
	"github.com/clientele/clientele/domain/customer"
	retrievalproj "github.com/clientele/clientele/projections/retrieval"
)

// trackingToken is the form of an issued customer_token
// (imports.NewCustomerToken).
var trackingToken = regexp.MustCompile(`^[a-z2-7]{26}$`)

// tokensByExternalID retrieves the company's customers and returns their
// tokens by external_id, checking each has an issued token's form.
func (e *env) tokensByExternalID(token string, opts ...option) map[string]string {
	e.t.Helper()
	out := map[string]string{}
	for _, c := range e.retrieve(token, opts...).Customers {
		tok, _ := c["customer_token"].(string)
		if !trackingToken.MatchString(tok) {
			e.t.Errorf("customer %v: customer_token %q, want 26 characters of a-z and 2-7", c["id"], tok)
		}
		out[fmt.Sprint(c["external_id"])] = tok
	}
	return out
}

// runRejections uploads body, waits for the run and the projections, and
// returns its rejections as "index field: reason".
func (e *env) runRejections(token, path, body string, opts ...option) []string {
	e.t.Helper()
	run := e.mustUpload(token, path, append([]option{rawBody(body)}, opts...)...)
	a, res := e.waitRun(token, run, opts...)
	if a.Import.State != "completed" {
		e.t.Fatalf("run: %s", res.body)
	}
	e.waitProjections()
	out := []string{}
	for _, r := range a.Import.Rejections {
		f := ""
		if r.Field != nil {
			f = *r.Field
		}
		out = append(out, fmt.Sprintf("%d %s: %s", r.Index, f, r.Reason))
	}
	return out
}

// onlyCustomer retrieves the customers matching the filters, failing
// unless there is exactly one.
func (e *env) onlyCustomer(token string, filters ...string) map[string]any {
	e.t.Helper()
	var opts []option
	for i := 0; i < len(filters); i += 2 {
		opts = append(opts, withQuery(filters[i], filters[i+1]))
	}
	got := e.retrieve(token, opts...).Customers
	if len(got) != 1 {
		e.t.Fatalf("customers %v: %v, want one", filters, got)
	}
	return got[0]
}

// TestCustomerTokens: every customer is issued its own token, shown by
// retrieval and usable as its filter; records find a customer by it but
// never set or change it; the tokens outlive a rebuild of the read
// model unchanged.
func TestCustomerTokens(t *testing.T) {
	e, admin := eventsEnv(t)
	e.importAll(admin, "/api/customers/upload/", `[
		{"external_id": "C-1", "email": "ann@example.com", "first_name": "Ann"},
		{"external_id": "C-2", "email": "bob@example.com"},
		{"external_id": "C-3", "customer_token": "chosen-by-the-client"}
	]`)
	tokens := e.tokensByExternalID(admin)
	if len(tokens) != 3 || tokens["C-1"] == tokens["C-2"] || tokens["C-2"] == tokens["C-3"] || tokens["C-1"] == tokens["C-3"] {
		t.Fatalf("tokens %v, want three different ones", tokens)
	}
	globex := e.userToken(e.globexAd, globexHost)
	e.runRejections(globex, "/api/customers/upload/", `[{"external_id": "C-1"}]`, host(globexHost))
	globexTok := e.tokensByExternalID(globex, host(globexHost))["C-1"]

	got := e.runRejections(admin, "/api/customers/upload/", `[
		{"external_id": "C-1", "last_name": "Anderson", "customer_token": "forged"},
		{"customer_token": "`+tokens["C-2"]+`", "first_name": "Bob"},
		{"customer_token": "no-such-token", "first_name": "Cy"},
		{"customer_token": "`+globexTok+`", "first_name": "Dee"},
		{"email": "eve@example.com", "customer_token": "`+tokens["C-1"]+`"}
	]`)
	want := []string{
		"2 customer_token: " + customer.ReasonNoMatch, // a token creates nobody
		"3 customer_token: " + customer.ReasonNoMatch, // another company's token is nobody here
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("rejections (-want +got):\n%s", diff)
	}
	after := e.tokensByExternalID(admin)
	for _, ext := range []string{"C-1", "C-2", "C-3"} {
		if after[ext] != tokens[ext] {
			t.Errorf("%s's token is %s after the updates, was %s", ext, after[ext], tokens[ext])
		}
	}
	if c := e.onlyCustomer(admin, "customer_token", tokens["C-2"]); c["external_id"] != "C-2" || c["first_name"] != "Bob" {
		t.Errorf("the customer with C-2's token: %v, want C-2 named Bob by a record naming the token", c)
	}
	if c := e.onlyCustomer(admin, "customer_token", tokens["C-1"]); c["external_id"] != "C-1" || c["last_name"] != "Anderson" {
		t.Errorf("the customer with C-1's token: %v", c)
	}
	if c := e.onlyCustomer(admin, "email", "eve@example.com"); c["external_id"] != nil || c["customer_token"] == tokens["C-1"] {
		t.Errorf("a token beside an email found its customer: %v", c)
	}
	for _, tok := range []string{"no-such-token", globexTok, "forged", "chosen-by-the-client"} {
		if got := e.retrieve(admin, withQuery("customer_token", tok)).Customers; len(got) != 0 {
			t.Errorf("filter customer_token=%s: %v, want none", tok, got)
		}
	}

	// A rebuild of the read model from the log gives every customer the
	// same token.
	before := e.tokensByExternalID(admin)
	e.rebuildAll(retrievalproj.NewCustomers(e.keys))
	if diff := cmp.Diff(before, e.tokensByExternalID(admin)); diff != "" {
		t.Errorf("tokens after a rebuild (-before +after):\n%s", diff)
	}
}

// TestEventsByCustomerToken: an event naming only a token is its
// customer's (it changes that customer, is sealed with its key, and is
// retrieved with the token it named); a token of nobody, of another
// company, or beside an identifier nobody holds finds no customer, and a
// subscription by token creates none.
func TestEventsByCustomerToken(t *testing.T) {
	e, admin := eventsEnv(t)
	e.importAll(admin, "/api/customers/upload/", `[{"external_id": "C-1", "first_name": "Ann"}, {"external_id": "C-2"}]`)
	tokens := e.tokensByExternalID(admin)
	ann := idOf(t, e.onlyCustomer(admin, "external_id", "C-1"))
	globex := e.userToken(e.globexAd, globexHost)
	e.runRejections(globex, "/api/customers/upload/", `[{"external_id": "G-1"}]`, host(globexHost))
	globexTok := e.tokensByExternalID(globex, host(globexHost))["G-1"]

	got := e.runRejections(admin, "/api/events/upload/", `[
		{"type": "BROWSE", "date": "2025-01-02", "customer_token": " `+tokens["C-1"]+` ", "label": "home", "first_name": "Annie"},
		{"type": "BROWSE", "date": "2025-01-02", "customer_token": "no-such-token", "label": "home"},
		{"type": "SMS_SUBSCRIBE", "date": "2025-01-02", "customer_token": "no-such-token"},
		{"type": "BROWSE", "date": "2025-01-02", "customer_token": "`+globexTok+`", "label": "home"},
		{"type": "BROWSE", "date": "2025-01-02", "email": "nobody@example.com", "customer_token": "`+tokens["C-1"]+`", "label": "home"},
		{"type": "SMS_SUBSCRIBE", "date": "2025-01-02", "customer_token": "`+tokens["C-2"]+`"}
	]`)
	want := []string{
		"1 customer_token: " + customer.ReasonNoMatch,
		"2 customer_token: " + customer.ReasonNoMatch,
		"3 customer_token: " + customer.ReasonNoMatch,
		"4 email: " + customer.ReasonNoMatch,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("rejections (-want +got):\n%s", diff)
	}
	if n := len(e.retrieve(admin).Customers); n != 2 {
		t.Errorf("%d customers, want the 2 imported: no event created one", n)
	}
	if c := e.onlyCustomer(admin, "external_id", "C-1"); c["first_name"] != "Annie" {
		t.Errorf("C-1 after an event naming its token: %v, want first_name Annie", c)
	}
	if c := e.onlyCustomer(admin, "external_id", "C-2"); c["can_sms"] != true {
		t.Errorf("C-2 after subscribing by its token: %v, want can_sms", c)
	}
	events := e.retrieveAll(admin, "events", withQuery("customer_token", tokens["C-1"])).Items
	if len(events) != 1 || events[0]["label"] != "home" || events[0]["first_name"] != "Annie" {
		t.Fatalf("events with C-1's token: %v, want the BROWSE", events)
	}
	var owner string
	if err := e.pool.QueryRow(context.Background(), `SELECT customer_id FROM activity_events WHERE company_id = $1 AND event_id = $2`,
		e.acme.ID, events[0]["id"]).Scan(&owner); err != nil || owner != ann {
		t.Errorf("the event's customer is %q (%v), want C-1's %s", owner, err, ann)
	}

	// Forgetting C-1 shreds the event's personal fields, the token among
	// them: it was sealed with C-1's key.
	e.importAll(admin, "/api/customers/upload/", `[{"external_id": "C-1", "is_forgotten": true}]`)
	if got := e.retrieveAll(admin, "events", withQuery("customer_token", tokens["C-1"])).Items; len(got) != 0 {
		t.Errorf("events with the forgotten customer's token: %v, want none", got)
	}
}

// TestForgottenCustomerTokenMatchesNobody: forgetting frees the token:
// retrieval no longer shows it, and a record or event naming it is
// rejected as naming nobody (not as the forgotten customer, whom the
// token must not point at). A deleted customer keeps its token, and
// records naming it are rejected as for the deleted.
func TestForgottenCustomerTokenMatchesNobody(t *testing.T) {
	e, admin := eventsEnv(t)
	e.importAll(admin, "/api/customers/upload/", `[{"external_id": "C-1", "email": "ann@example.com"}, {"external_id": "C-2"}]`)
	tokens := e.tokensByExternalID(admin)
	if got := e.runRejections(admin, "/api/customers/upload/", `[
		{"customer_token": "`+tokens["C-1"]+`", "is_forgotten": true},
		{"external_id": "C-2", "is_deleted": true}
	]`); len(got) != 0 {
		t.Fatalf("rejections %v", got)
	}
	forgotten := e.onlyCustomer(admin, "is_forgotten", "true")
	if _, ok := forgotten["customer_token"]; ok {
		t.Errorf("the forgotten customer still shows its token: %v", forgotten)
	}
	if got := e.retrieve(admin, withQuery("customer_token", tokens["C-1"])).Customers; len(got) != 0 {
		t.Errorf("filter by the forgotten customer's token: %v, want none", got)
	}
	got := e.runRejections(admin, "/api/events/upload/", `[
		{"type": "BROWSE", "date": "2025-01-02", "customer_token": "`+tokens["C-1"]+`", "label": "home"},
		{"type": "BROWSE", "date": "2025-01-02", "customer_token": "`+tokens["C-2"]+`", "label": "home"},
		{"type": "BROWSE", "date": "2025-01-02", "email": "ann@example.com", "label": "home"}
	]`)
	want := []string{
		"0 customer_token: " + customer.ReasonNoMatch,
		"1 : " + customer.ReasonDeleted,
		"2 email: " + customer.ReasonForgotten, // the identities still refuse the person
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("event rejections (-want +got):\n%s", diff)
	}
	got = e.runRejections(admin, "/api/customers/upload/", `[{"customer_token": "`+tokens["C-1"]+`", "first_name": "Ann"}]`)
	if diff := cmp.Diff([]string{"0 customer_token: " + customer.ReasonNoMatch}, got); diff != "" {
		t.Errorf("customer rejections (-want +got):\n%s", diff)
	}
}

// TestIssueTokensToCustomersFromBeforeTokens: customers created before
// tokens (their events set none, their state holds none) are given one
// by the backfill serve runs: retrieval shows it, it filters, events
// naming it are the customer's, and the history says the system did it.
func TestIssueTokensToCustomersFromBeforeTokens(t *testing.T) {
	e, admin := eventsEnv(t)
	ctx := context.Background()
	// The write side as it was: the creating events, and states without
	// a token.
	ids := []string{"0190a0a0a0a0700080000000000000a1", "0190a0a0a0a0700080000000000000a2", "0190a0a0a0a0700080000000000000a3"}
	var records []customerRecord
	for i, id := range ids {
		records = append(records, customerRecord{id: id, set: permissions(map[string]any{"external_id": fmt.Sprintf("L-%d", i+1)})})
	}
	e.upsertCustomers(e.acme, records...)
	for _, id := range ids {
		if _, err := e.pool.Exec(ctx, `INSERT INTO customer_states (company_id, customer_id, version, created_at, updated_at)
			VALUES ($1, $2, 1, now(), now())`, e.acme.ID, id); err != nil {
			t.Fatal(err)
		}
	}
	// The third was deleted.
	c := customerCommit(e.acme)
	c.Streams = append(c.Streams, customerAppend(e.acme, ids[2], customer.TypeDeleted, customer.Deleted{CustomerID: ids[2]}))
	if _, err := e.store.Append(ctx, c); err != nil {
		t.Fatal(err)
	}
	if _, err := e.pool.Exec(ctx, `UPDATE customer_states SET version = 2, deleted = true WHERE company_id = $1 AND customer_id = $2`,
		e.acme.ID, ids[2]); err != nil {
		t.Fatal(err)
	}
	e.waitProjections()
	for _, c := range e.retrieve(admin).Customers {
		if _, ok := c["customer_token"]; ok {
			t.Fatalf("a customer from before tokens has one: %v", c)
		}
	}

	h := imports.NewIssueCustomerTokensHandler(e.pool, e.store, e.keys, func() time.Time { return created })
	got, err := h.Handle(ctx, imports.IssueCustomerTokens{Batch: 1})
	if err != nil || got != (imports.IssuedCustomerTokens{Issued: 2}) {
		t.Fatalf("Handle = %+v, %v; want 2 issued (not the deleted customer), none remaining", got, err)
	}
	e.waitProjections()
	tokens := e.tokensByExternalID(admin)
	if len(tokens) != 2 || tokens["L-1"] == tokens["L-2"] {
		t.Fatalf("tokens %v, want two different ones", tokens)
	}
	if c := e.onlyCustomer(admin, "customer_token", tokens["L-2"]); c["id"] != ids[1] {
		t.Errorf("filter by L-2's token: %v", c)
	}
	if rej := e.runRejections(admin, "/api/events/upload/", `[
		{"type": "BROWSE", "date": "2025-01-02", "customer_token": "`+tokens["L-1"]+`", "label": "home", "first_name": "Lea"}
	]`); len(rej) != 0 {
		t.Fatalf("an event naming an issued token: %v", rej)
	}
	if c := e.onlyCustomer(admin, "external_id", "L-1"); c["first_name"] != "Lea" {
		t.Errorf("L-1 after the event: %v", c)
	}
	res := e.do(http.MethodGet, "/api/customers/"+ids[0]+"/history/", bearer(admin))
	res.wantStatus(t, http.StatusOK)
	var h1 ruleHistory
	res.decode(t, &h1)
	if len(h1.Events) < 2 || h1.Events[1].Actor != "system" || h1.Events[1].Source != "system" ||
		!cmp.Equal(h1.Events[1].Fields, []string{"customer_token"}) {
		t.Errorf("history: %s, want the second event by the system, setting customer_token", res.body)
	}
	if again, err := h.Handle(ctx, imports.IssueCustomerTokens{}); err != nil || again != (imports.IssuedCustomerTokens{}) {
		t.Errorf("a second run: %+v, %v; want nothing done", again, err)
	}
}

// TestDataQueryNamesCustomersByToken: a data query names each matched
// customer by its token, which finds exactly that customer, even when the
// customer's stored phone number is a key another customer took since
// (with the phone number, the update would go to that other customer).
func TestDataQueryNamesCustomersByToken(t *testing.T) {
	e, admin := eventsEnv(t)
	e.importAll(admin, "/api/customers/upload/", `[
		{"email": "a@example.com", "city": "Espoo"},
		{"phone_number": "+358401234567", "city": "Turku"}
	]`)
	// A takes B's phone key; B keeps the stored number.
	e.importAll(admin, "/api/customers/upload/", `[{"email": "a@example.com", "phone_number": "+358401234567"}]`)
	res := e.do(http.MethodPost, "/api/data/query/", bearer(admin), jsonBody(map[string]any{
		"datatype": "customers", "match": map[string]any{"city": "Turku"}, "update": map[string]any{"tags.add": []string{"turku"}},
	}))
	res.wantStatus(t, http.StatusOK)
	var a struct {
		RunID string `json:"run_id"`
	}
	res.decode(t, &a)
	if run, body := e.waitRun(admin, a.RunID); run.Import.Accepted != 1 {
		t.Fatalf("run: %s", body.body)
	}
	e.waitProjections()
	if c := e.onlyCustomer(admin, "city", "Turku"); !cmp.Equal(c["tags"], []any{"turku"}) {
		t.Errorf("the matched customer: %v, want it tagged", c)
	}
	if c := e.onlyCustomer(admin, "city", "Espoo"); !cmp.Equal(c["tags"], []any{}) {
		t.Errorf("the customer holding the phone key: %v, want it untouched", c)
	}
}
