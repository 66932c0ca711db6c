package systemtest_test

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"

	"github.com/clientele/clientele/domain/customer"
	"github.com/clientele/clientele/eventstore"
	retrievalproj "github.com/clientele/clientele/projections/retrieval"
)

// TestNULIsARejectionNotAPoisonCommit checks that a record carrying the
// character U+0000, which PostgreSQL cannot store in text or jsonb, is
// rejected like any bad record. Accepted, it would make every later write
// of its commit fail: a projector retrying it for ever, and with it the
// imports and projections of every company behind it.
func TestNULIsARejectionNotAPoisonCommit(t *testing.T) {
	e := newEnv(t)
	e.runImports()
	e.runProjections(retrievalproj.NewCustomers(e.keys), retrievalproj.NewShops())
	token := e.userToken(e.admin, acmeHost)

	for _, tc := range []struct {
		name, path, body, field string
	}{
		{"customer field", "/api/customers/upload/", `[{"external_id":"nul-1","first_name":"a\u0000b"},{"external_id":"ok-1"}]`, "first_name"},
		{"customer list", "/api/customers/upload/", `[{"external_id":"nul-2","tags":["x\u0000"]},{"external_id":"ok-2"}]`, "tags"},
		{"shop field", "/api/shops/upload/", `[{"external_id":"s-nul","name":"\u0000"},{"external_id":"s-ok"}]`, "name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run := e.mustUpload(token, tc.path, rawBody(tc.body))
			a, _ := e.waitRun(token, run)
			if a.Import.State != "completed" || a.Import.Accepted != 1 || a.Import.Rejected != 1 {
				t.Fatalf("run %s: %d accepted, %d rejected, want 1 and 1", a.Import.State, a.Import.Accepted, a.Import.Rejected)
			}
			rj := a.Import.Rejections[0]
			if rj.Index != 0 || rj.Field == nil || *rj.Field != tc.field {
				t.Fatalf("rejection %+v, want index 0 field %s", rj, tc.field)
			}
		})
	}
	// The log still flows: the good records are retrievable.
	e.waitProjections()
	for _, id := range []string{"ok-1", "ok-2"} {
		if got := e.retrieve(token, withQuery("external_id", id)); len(got.Customers) != 1 {
			t.Errorf("customer %s not retrievable: %v", id, got.Customers)
		}
	}
	res := e.do(http.MethodGet, "/api/data/shops/", bearer(token), withQuery("external_id", "s-ok"))
	res.wantStatus(t, http.StatusOK)
}

// TestBadBytesInURLAreBadRequests checks that a path or query PostgreSQL
// cannot compare (invalid UTF-8, U+0000) is the client's 400, never a 500.
func TestBadBytesInURLAreBadRequests(t *testing.T) {
	e := newEnv(t)
	token := e.userToken(e.admin, acmeHost)
	for _, path := range []string{
		"/api/datatargets/%00/", "/api/datatargets/%ff/", "/api/customers/%00/history/",
		"/api/imports/%00/", "/api/data/customers/?last_name=%00", "/api/data/customers/?a%00=b",
	} {
		t.Run(path, func(t *testing.T) {
			e.do(http.MethodGet, path, bearer(token)).wantError(t, http.StatusBadRequest, "invalid_request")
		})
	}
}

// curable is the customers projector with a switch that stands for a fix
// deployed for a poison commit: once cured, it leaves out the events of
// the stream poison, whose record holds a value the read model cannot
// store.
type curable struct {
	*retrievalproj.Customers
	poison string
	cured  atomic.Bool
}

func (c *curable) Apply(ctx context.Context, tx pgx.Tx, events []eventstore.RecordedEvent) error {
	if c.cured.Load() {
		events = slices.DeleteFunc(slices.Clone(events), func(e eventstore.RecordedEvent) bool { return e.StreamID == c.poison })
	}
	return c.Customers.Apply(ctx, tx, events)
}

// TestPoisonCommitStopsOnlyItsCompany: a commit of acme that the
// customers projector cannot store (a number jsonb cannot hold, as a
// record that passed the write side's checks would leave it in the log)
// parks acme for that projector alone. globex's new, changed and
// forgotten customers reach retrieval as before, and an acme customer
// forgotten while acme is parked leaves retrieval at once; acme's other
// changes wait, and appear in order once the stall is cleared (a fix,
// then the operator's retry).
func TestPoisonCommitStopsOnlyItsCompany(t *testing.T) {
	e := newEnv(t)
	e.runImports()
	p := &curable{Customers: retrievalproj.NewCustomers(e.keys), poison: customer.Stream(e.acme.ID, "pat")}
	e.runProjections(p)
	acme, globex := e.userToken(e.admin, acmeHost), e.userToken(e.globexAd, globexHost)
	upload := func(token, h, body string) {
		t.Helper()
		run := e.mustUpload(token, "/api/customers/upload/", host(h), rawBody(body))
		if a, res := e.waitRun(token, run, host(h)); a.Import.State != "completed" || a.Import.Rejected != 0 {
			t.Fatalf("run: %s", res.body)
		}
		e.waitProjections()
	}
	one := func(token, h, key, value string) map[string]any {
		t.Helper()
		got := e.retrieve(token, host(h), withQuery(key, value)).Customers
		if len(got) != 1 {
			t.Fatalf("%s=%s: %v, want one customer", key, value, got)
		}
		return got[0]
	}
	upload(acme, acmeHost, `[{"external_id": "A-1", "email": "ann@example.com", "first_name": "Ann"},
		{"external_id": "A-2", "email": "amy@example.com", "first_name": "Amy"}]`)
	upload(globex, globexHost, `[{"external_id": "G-1", "email": "gil@example.com", "first_name": "Gil"},
		{"external_id": "G-2", "email": "gus@example.com", "first_name": "Gus"}]`)
	ann := one(acme, acmeHost, "external_id", "A-1")["id"].(string)
	gus := one(globex, globexHost, "external_id", "G-2")["id"].(string)

	e.upsertCustomers(e.acme, customerRecord{id: "pat", set: permissions(map[string]any{"ACME__x": json.Number("1e131072")})})
	stalls, err := e.runtime.Stalls(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(stalls) != 1 || stalls[0].Projection != "customers" || stalls[0].CompanyID != e.acme.ID || !strings.Contains(stalls[0].Error, "numeric") {
		t.Fatalf("stalls %+v, want acme parked for customers by the value", stalls)
	}
	// The node still serves every other company: ready, degraded, and
	// naming neither the company nor the error (the probe is public).
	ready := e.do(http.MethodGet, "/readyz")
	ready.wantStatus(t, http.StatusOK)
	if want := `{"stalled_companies":{"customers":1},"status":"degraded"}`; string(ready.body) != want {
		t.Errorf("readyz while acme is parked: %s, want %s", ready.body, want)
	}

	// While acme is parked: its changes wait, its forgetting does not.
	upload(acme, acmeHost, `[{"external_id": "A-2", "first_name": "Amelia"}, {"external_id": "A-3", "email": "abe@example.com"}]`)
	upload(acme, acmeHost, `[{"external_id": "A-2", "first_name": "Amy-Lou"}]`)
	upload(acme, acmeHost, `[{"external_id": "A-1", "is_forgotten": true}]`)
	if got := one(acme, acmeHost, "id", ann); !cmp.Equal(got, map[string]any{"id": ann, "is_deleted": false, "is_forgotten": true}) {
		t.Errorf("ann, forgotten while acme is parked: %v", got)
	}
	res := e.do(http.MethodGet, "/api/data/customers/", bearer(acme))
	res.wantStatus(t, http.StatusOK)
	if body := string(res.body); strings.Contains(body, "ann@example.com") || strings.Contains(body, `"Ann"`) {
		t.Errorf("retrieval still shows the forgotten person: %s", body)
	}
	if got := one(acme, acmeHost, "external_id", "A-2"); got["first_name"] != "Amy" {
		t.Errorf("amy changed while acme is parked: %v", got)
	}
	if got := e.retrieve(acme, withQuery("external_id", "A-3")).Customers; len(got) != 0 {
		t.Errorf("abe created while acme is parked: %v", got)
	}

	// globex goes on: new, changed and forgotten customers, at once.
	upload(globex, globexHost, `[{"external_id": "G-3", "email": "gia@example.com"}, {"external_id": "G-1", "first_name": "Gilbert"}]`)
	upload(globex, globexHost, `[{"external_id": "G-2", "is_forgotten": true}]`)
	if got := one(globex, globexHost, "external_id", "G-3"); got["email"] != "gia@example.com" {
		t.Errorf("gia: %v", got)
	}
	if got := one(globex, globexHost, "external_id", "G-1"); got["first_name"] != "Gilbert" {
		t.Errorf("gil: %v", got)
	}
	if got := one(globex, globexHost, "id", gus); !cmp.Equal(got, map[string]any{"id": gus, "is_deleted": false, "is_forgotten": true}) {
		t.Errorf("gus, forgotten: %v", got)
	}

	// The fix, then the operator's retry: acme's held commits, in order.
	p.cured.Store(true)
	if n, err := e.runtime.RetryStall(context.Background(), "customers", e.acme.ID); err != nil || n < 4 {
		t.Fatalf("RetryStall = %d, %v; want the held commits applied", n, err)
	}
	if stalls, err := e.runtime.Stalls(context.Background()); err != nil || len(stalls) != 0 {
		t.Fatalf("stalls after the retry: %+v, %v", stalls, err)
	}
	if ready := e.do(http.MethodGet, "/readyz"); string(ready.body) != `{"status":"ready"}` {
		t.Errorf("readyz after the retry: %s", ready.body)
	}
	if got := one(acme, acmeHost, "external_id", "A-2"); got["first_name"] != "Amy-Lou" || got["email"] != "amy@example.com" {
		t.Errorf("amy after the retry: %v, want her changes in order", got)
	}
	if got := one(acme, acmeHost, "external_id", "A-3"); got["email"] != "abe@example.com" {
		t.Errorf("abe after the retry: %v", got)
	}
	if got := one(acme, acmeHost, "id", ann); !cmp.Equal(got, map[string]any{"id": ann, "is_deleted": false, "is_forgotten": true}) {
		t.Errorf("ann after the retry: %v", got)
	}
	// Resumed, acme's changes reach retrieval as they come.
	upload(acme, acmeHost, `[{"external_id": "A-3", "first_name": "Abe"}]`)
	if got := one(acme, acmeHost, "external_id", "A-3"); got["first_name"] != "Abe" {
		t.Errorf("abe after acme resumed: %v", got)
	}
}
