package api_test

import (
	"net/http"
	"testing"

	"github.com/clientele/clientele/projections"
)

// TestNULIsARejectionNotAPoisonCommit checks that a record carrying the
// character U+0000, which PostgreSQL cannot store in text or jsonb, is
// rejected like any bad record. Accepted, it would make every later write
// of its commit fail: a projector retrying it for ever, and with it the
// imports and projections of every company behind it.
func TestNULIsARejectionNotAPoisonCommit(t *testing.T) {
	e := newEnv(t)
	e.runImports()
	e.runProjections(projections.NewCustomers(e.keys), projections.NewShops())
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
