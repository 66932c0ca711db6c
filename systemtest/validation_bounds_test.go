package systemtest_test

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
)

// errorBound is the most an error answer may weigh, whatever the body
// refused held.
const errorBound = 32 << 10

// TestValidationDetailsAreBounded: a body with hundreds of thousands of
// problems (unknown campaign fields, bad token scopes, bad outlet
// headers, bad exchange rates) is refused with the first 100 and one
// last detail counting the rest, in a few kilobytes: the campaign's was
// a million details and 135 MB.
func TestValidationDetailsAreBounded(t *testing.T) {
	e := newEnv(t)
	admin := e.userToken(e.admin, acmeHost)
	dt := e.createDatatarget(admin, "orders")
	many := func(n int, item func(i int) string) string {
		var b strings.Builder
		for i := range n {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(item(i))
		}
		return b.String()
	}
	tests := []struct {
		name, method, path, body string
		status                   int
		code                     string
		more                     int
	}{
		{"unknown campaign fields", http.MethodPost, "/api/campaigns/",
			`{"kind": "email", "name": "x", ` + many(300_000, func(i int) string { return `"f` + strconv.Itoa(i) + `": 1` }) + `}`,
			http.StatusBadRequest, "invalid_request", 299_900},
		{"bad token scopes", http.MethodPost, "/api/access-tokens/",
			`{"scopes": [` + many(50_000, func(int) string { return `{"path": ""}` }) + `]}`,
			http.StatusUnprocessableEntity, "validation_error", 49_900},
		{"bad outlet headers", http.MethodPost, "/api/datatargets/" + dt + "/outlets/",
			`{"outlet_type": "webhook", "request": {"url": "https://example.com/", "method": "POST", "headers": {` +
				many(50_000, func(i int) string { return `"bad name ` + strconv.Itoa(i) + `": "v"` }) + `}}}`,
			http.StatusUnprocessableEntity, "validation_error", 49_900},
		{"bad exchange rates", http.MethodPut, "/api/exchange-rates/",
			`{"exchange_rates": {` + many(50_000, func(i int) string { return `"C` + strconv.Itoa(i) + `": true` }) + `}}`,
			http.StatusUnprocessableEntity, "validation_error", 49_900},
	}
	for _, tt := range tests {
		res := e.do(tt.method, tt.path, bearer(admin), rawBody(tt.body))
		if len(res.body) > errorBound {
			t.Errorf("%s: the answer is %d bytes, over %d", tt.name, len(res.body), errorBound)
		}
		b := res.wantError(t, tt.status, tt.code)
		if len(b.Error.Details) != 101 {
			t.Errorf("%s: %d details, want 100 and a count", tt.name, len(b.Error.Details))
			continue
		}
		last := b.Error.Details[100]
		if want := "and " + strconv.Itoa(tt.more) + " more problems like these: only the first 100 are listed"; last.Field != "" || last.Reason != want {
			t.Errorf("%s: last detail %+v, want %q", tt.name, last, want)
		}
		for _, d := range b.Error.Details[:100] {
			if d.Field == "" {
				t.Errorf("%s: a detail names no field: %+v", tt.name, d)
				break
			}
		}
	}
}

// TestRoleComesBeforeTheBody: on every route that needs a role, a caller
// without it is 403 whatever it sends, never a 400 for a body that was
// parsed first: a token without roles posting broken JSON or a flood of
// unknown fields, a staff user on the admin's routes.
func TestRoleComesBeforeTheBody(t *testing.T) {
	e := newEnv(t)
	admin := e.userToken(e.admin, acmeHost)
	staff := e.userToken(e.staff, acmeHost)
	integ := e.createIntegration(admin, "shop")
	bare := e.createToken(admin, map[string]any{"owner_id": "integrations/" + integ}).AccessToken.Token
	dt := e.createDatatarget(admin, "orders")
	e.do(http.MethodPost, "/api/campaigns/", bearer(admin), jsonBody(map[string]string{"campaign_key": "CA-1", "kind": "email", "name": "x"})).
		wantStatus(t, http.StatusOK)
	outlet := "/api/datatargets/" + dt + "/outlets/" + e.createOutlet(admin, dt, "http://127.0.0.1:9/hook", false) + "/"
	flood := `{` + strings.Repeat(`"x": 1, `, 100_000) + `"y": 1}`

	routes := []struct {
		method, path string
		admin        bool // else staff may
		// noBody: the route reads no body, so an admin's broken one is
		// not refused (nor sent, which would act).
		noBody bool
	}{
		{http.MethodPost, "/api/campaigns/", false, false},
		{http.MethodPatch, "/api/campaigns/CA-1/", false, false},
		{http.MethodPost, "/api/datatargets/", false, false},
		{http.MethodPatch, "/api/datatargets/" + dt + "/", false, false},
		{http.MethodPost, "/api/datatargets/" + dt + "/outlets/", false, false},
		{http.MethodPost, "/api/integrations/", true, false},
		{http.MethodPost, "/api/sftp-keys/", true, false},
		{http.MethodPut, "/api/exchange-rates/", true, false},
		// Controlling delivery (datatarget.MayControl).
		{http.MethodPatch, outlet, true, false},
		{http.MethodPost, outlet + "rewind/", true, false},
		{http.MethodPost, outlet + "parked/redeliver/", true, true},
		{http.MethodPost, outlet + "parked/1/redeliver/", true, true},
		{http.MethodDelete, outlet + "parked/1/", true, true},
		{http.MethodDelete, outlet, true, true},
		{http.MethodDelete, "/api/datatargets/" + dt + "/", true, true},
	}
	for _, r := range routes {
		for _, body := range []string{`{"not json`, flood} {
			e.do(r.method, r.path, bearer(bare), rawBody(body)).wantError(t, http.StatusForbidden, "forbidden")
			if r.admin {
				e.do(r.method, r.path, bearer(staff), rawBody(body)).wantError(t, http.StatusForbidden, "forbidden")
			}
		}
		// Who has the role is told what is wrong with the body.
		if r.noBody {
			continue
		}
		e.do(r.method, r.path, bearer(admin), rawBody(`{"not json`)).wantError(t, http.StatusBadRequest, "invalid_request")
	}
}
