package systemtest_test

import (
	"net/http"
	"strings"
	"testing"
)

// outletWarnings is the warnings of an outlet's creation or change.
type outletWarnings struct {
	Warnings []struct {
		Field  string `json:"field"`
		Reason string `json:"reason"`
	} `json:"warnings"`
}

// TestOutletRefusedAddressWarned: creating or changing an outlet whose
// address the delivery's SSRF guard will refuse (a private or link-local
// address, outside the networks allowed) succeeds with a warning on
// request.url naming the address and how to allow it; an allowed address
// (the tests' deliverers allow loopback), or a name that resolves to one,
// gets none; a GET never warns.
func TestOutletRefusedAddressWarned(t *testing.T) {
	e := newEnv(t)
	admin := e.userToken(e.admin, acmeHost)
	staff := e.userToken(e.staff, acmeHost)
	id := e.createDatatarget(admin, "orders")
	path := "/api/datatargets/" + id + "/outlets/"
	warned := func(res response, what, want string) string {
		t.Helper()
		res.wantStatus(t, http.StatusOK)
		var w outletWarnings
		var o outletAnswer
		res.decode(t, &w)
		res.decode(t, &o)
		switch {
		case want == "" && w.Warnings != nil:
			t.Errorf("%s: warned %s", what, res.body)
		case want != "" && (len(w.Warnings) != 1 || w.Warnings[0].Field != "request.url" ||
			!strings.Contains(w.Warnings[0].Reason, want) || !strings.Contains(w.Warnings[0].Reason, "--webhook-allow-cidrs")):
			t.Errorf("%s: warnings %s, want one on request.url naming %q", what, res.body, want)
		}
		return o.Outlet.ID
	}
	create := func(url string) response {
		return e.do(http.MethodPost, path, bearer(staff), jsonBody(map[string]any{"outlet_type": "webhook", "request": map[string]any{"url": url}}))
	}
	private := warned(create("http://10.1.2.3/hook"), "a private address", "10.1.2.3 (private address)")
	warned(create("http://127.0.0.1:9/hook"), "an allowed address", "")
	warned(create("http://localhost:9/hook"), "a name of an allowed address", "")
	e.do(http.MethodGet, path+private+"/", bearer(staff)).wantStatus(t, http.StatusOK)
	if res := e.do(http.MethodGet, path+private+"/", bearer(staff)); strings.Contains(string(res.body), "warnings") {
		t.Errorf("GET warns: %s", res.body)
	}

	patch := func(oid string, body map[string]any) response {
		return e.do(http.MethodPatch, path+oid+"/", bearer(admin), jsonBody(body))
	}
	warned(patch(private, map[string]any{"request": map[string]any{"url": "http://169.254.169.254/latest/"}}),
		"changed to a link-local address", "169.254.169.254 (link-local address)")
	warned(patch(private, map[string]any{"enabled": false}), "changed, its address still refused", "169.254.169.254 (link-local address)")
	warned(patch(private, map[string]any{"request": map[string]any{"url": "http://127.0.0.1:9/hook"}}), "changed to an allowed address", "")
}
