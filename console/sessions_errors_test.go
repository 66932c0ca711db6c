package console_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/clientele/clientele/app"
	"github.com/clientele/clientele/authn"
	"github.com/clientele/clientele/domain"
	"github.com/clientele/clientele/domain/access"
	"github.com/clientele/clientele/internal/pg/pgtest"
	"github.com/clientele/clientele/readmodels"
)

// TestSessionsDatabaseUnavailable: the sessions' database errors are
// typed (authn.ConsoleSessions translates them as the read models do),
// so a session store that cannot be reached answers
// as the API does (503 with Retry-After, code unavailable), not 500: the
// lookup of every page's session, the log-in that starts one (its
// password checked on the database that is up) and the log-out that ends
// one.
func TestSessionsDatabaseUnavailable(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	down := e.twin(func(a *app.Application) {
		unreachable := pgtest.UnreachablePool(t)
		a.Commands.Sessions = authn.NewConsoleSessions(unreachable, readmodels.NewAccess(unreachable), authn.DefaultSessionTTL)
	})
	// A value of the console's form: the lookup goes to the database.
	cookie := map[string]string{"Cookie": "clientele_console=" + strings.Repeat("A", access.ConsoleSessionLength)}
	withJSON := map[string]string{"Cookie": cookie["Cookie"], "Accept": "application/json"}
	logOut := map[string]string{"Cookie": cookie["Cookie"], "Sec-Fetch-Site": "same-origin"}
	c := down.client(acmeHost)
	for _, tc := range []struct {
		name, method, path string
		form               url.Values
		header             map[string]string
	}{
		{"page", http.MethodGet, "/console/customers", nil, cookie},
		{"script", http.MethodGet, "/console/customers", nil, withJSON},
		{"log-in form", http.MethodGet, "/console/login", nil, cookie},
		{"log-in", http.MethodPost, "/console/login", url.Values{"email": {e.admin.Email}, "password": {password}}, sameOrigin},
		{"log-out", http.MethodPost, "/console/logout", url.Values{}, logOut},
	} {
		res, body := c.do(tc.method, tc.path, tc.form, tc.header)
		if tc.name == "log-in form" {
			// The form shows whatever the lookup says: no session.
			if res.StatusCode != http.StatusOK {
				t.Errorf("%s: %d, want the form", tc.name, res.StatusCode)
			}
			continue
		}
		if res.StatusCode != http.StatusServiceUnavailable || res.Header.Get("Retry-After") == "" {
			t.Errorf("%s with the sessions' database away: %d, Retry-After %q, want 503 with Retry-After\n%s",
				tc.name, res.StatusCode, res.Header.Get("Retry-After"), body)
		}
		// The page says what the API says; a script gets its code too.
		if !strings.Contains(body, "retry later") || tc.header["Accept"] != "" && !strings.Contains(body, `"code":"unavailable"`) {
			t.Errorf("%s: the answer does not say the service is unavailable:\n%s", tc.name, body)
		}
		if len(res.Cookies()) != 0 {
			t.Errorf("%s: cookies %v set while the session is unknown", tc.name, res.Header["Set-Cookie"])
		}
	}
	// The same server is itself up: a request with no session value
	// reaches no database and is sent to the log-in page.
	if res, _ := c.do(http.MethodGet, "/console/customers", nil, nil); res.StatusCode != http.StatusSeeOther {
		t.Errorf("a page without a session: %d, want the log-in page", res.StatusCode)
	}
}

// TestSessionCookieBadText: a session cookie whose value holds U+0000 or
// invalid UTF-8 (sent as is, past any client's checks) is no session,
// never a 500: a page sends to the log-in page, a script is told 401, a
// log-out clears the cookie. Below the cookie, the store types text
// PostgreSQL cannot compare or store as the caller's (invalid_request),
// so no value that reaches a query is a 500 either.
func TestSessionCookieBadText(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	h := e.srv.Config.Handler
	for _, value := range []string{
		"\x00" + strings.Repeat("A", access.ConsoleSessionLength-1),
		"\xff" + strings.Repeat("A", access.ConsoleSessionLength-1),
		"a\x00b", "a\xffb", "\xc3\x28", strings.Repeat("\x00", 100),
	} {
		for _, tc := range []struct {
			name, method, path, accept string
			want                       int
		}{
			{"page", http.MethodGet, "/console/customers", "", http.StatusSeeOther},
			{"script", http.MethodGet, "/console/customers", "application/json", http.StatusUnauthorized},
			{"log-in form", http.MethodGet, "/console/login", "", http.StatusOK},
			{"log-out", http.MethodPost, "/console/logout", "", http.StatusSeeOther},
		} {
			req := httptest.NewRequest(tc.method, "http://"+acmeHost+tc.path, strings.NewReader(""))
			req.Header["Cookie"] = []string{"clientele_console=" + value}
			req.Header.Set("Sec-Fetch-Site", "same-origin")
			if tc.accept != "" {
				req.Header.Set("Accept", tc.accept)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != tc.want {
				t.Errorf("%s with the cookie %q: %d, want %d\n%s", tc.name, value, rec.Code, tc.want, rec.Body)
			}
		}
	}

	ctx := context.Background()
	sessions := authn.NewConsoleSessions(e.pool, readmodels.NewAccess(e.pool), time.Hour)
	token, err := sessions.Create(ctx, e.acme.ID, e.admin.ID, []access.Role{access.RoleAdmin})
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"a\x00b", "a\xffb"} {
		if _, err := sessions.Lookup(ctx, bad, token); domain.ErrorCode(err) != domain.Invalid {
			t.Errorf("a lookup in the company %q: %v, want %s", bad, err, domain.Invalid)
		}
		if _, err := sessions.Create(ctx, e.acme.ID, bad, nil); domain.ErrorCode(err) != domain.Invalid {
			t.Errorf("a session of the user %q: %v, want %s", bad, err, domain.Invalid)
		}
		if err := sessions.Revoke(ctx, bad, token); domain.ErrorCode(err) != domain.Invalid {
			t.Errorf("revoking in the company %q: %v, want %s", bad, err, domain.Invalid)
		}
	}
	if _, err := sessions.Lookup(ctx, e.globex.ID, token); domain.ErrorCode(err) != domain.NotFound {
		t.Errorf("a session looked up in another company: %v, want %s", err, domain.NotFound)
	}
	if user, err := sessions.Lookup(ctx, e.acme.ID, token); err != nil || user.ID != e.admin.ID {
		t.Errorf("the session: %q, %v, want %s", user.ID, err, e.admin.ID)
	}
}
