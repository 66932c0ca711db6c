package console_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/clientele/clientele/domain/access"
	"github.com/clientele/clientele/domain/importing"
)

// TestSessionsPerUserBounded: successful log-ins are not limited as
// failed ones are, so each log-in past access.MaxConsoleSessionsPerUser ends
// the user's oldest session: the table holds a bounded number of rows per
// user however often it logs in. The oldest cookie then opens nothing,
// the newer ones and another user's session still do.
func TestSessionsPerUserBounded(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	staff := e.client(acmeHost)
	staff.logIn(e.staff.Email, "")
	var browsers []*client
	for range access.MaxConsoleSessionsPerUser + 2 {
		c := e.client(acmeHost)
		c.logIn(e.admin.Email, "")
		browsers = append(browsers, c)
	}
	var n int
	if err := e.pool.QueryRow(context.Background(), `SELECT count(*) FROM console_sessions WHERE user_id = $1`, e.admin.ID).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != access.MaxConsoleSessionsPerUser {
		t.Fatalf("%d sessions of the user after %d log-ins, want at most %d", n, len(browsers), access.MaxConsoleSessionsPerUser)
	}
	for i, c := range browsers {
		res, _ := c.do(http.MethodGet, "/console/customers", nil, nil)
		ended := i < len(browsers)-access.MaxConsoleSessionsPerUser
		if ended && (res.StatusCode != http.StatusSeeOther || !strings.HasPrefix(res.Header.Get("Location"), "/console/login")) {
			t.Errorf("log-in %d, one of the oldest: %d %s, want the log-in page", i, res.StatusCode, res.Header.Get("Location"))
		}
		if !ended && res.StatusCode != http.StatusOK {
			t.Errorf("log-in %d, one of the newest: %d, want the page", i, res.StatusCode)
		}
	}
	if res, _ := staff.do(http.MethodGet, "/console/customers", nil, nil); res.StatusCode != http.StatusOK {
		t.Errorf("another user's session after the admin's log-ins: %d", res.StatusCode)
	}
}

// TestSessionExpiry: a session past its expiry opens no page, and the
// next log-in (of anyone) deletes its row.
func TestSessionExpiry(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	c := e.client(acmeHost)
	c.logIn(e.staff.Email, "")
	if _, err := e.pool.Exec(ctx, `UPDATE console_sessions SET expires_at = now() - interval '1 second' WHERE user_id = $1`, e.staff.ID); err != nil {
		t.Fatal(err)
	}
	res, _ := c.do(http.MethodGet, "/console/customers", nil, nil)
	if res.StatusCode != http.StatusSeeOther || !strings.HasPrefix(res.Header.Get("Location"), "/console/login") {
		t.Fatalf("an expired session: %d %s, want the log-in page", res.StatusCode, res.Header.Get("Location"))
	}
	e.client(acmeHost).logIn(e.admin.Email, "")
	var n int
	if err := e.pool.QueryRow(ctx, `SELECT count(*) FROM console_sessions WHERE user_id = $1`, e.staff.ID).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Fatalf("%d expired sessions left after a log-in, want none", n)
	}
}

// TestSessionFollowsUser: the session's user is read again on every
// request. A user who loses a role they had at log-in is logged out (the
// session's row is gone: what was opened with more authority ends); one
// who gains a role keeps the session with it; a removed user's session
// opens nothing. (No command changes or removes users yet; the test
// changes the read model as one would.)
func TestSessionFollowsUser(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	e.mustImport(e.acme, importing.Customers, "external_id\nR-1\n")
	id := e.waitCustomer(e.acme, "external_id", "R-1")
	setRoles := func(userID, roles string) {
		t.Helper()
		if _, err := e.pool.Exec(ctx, `UPDATE users SET roles = $2 WHERE id = $1`, userID, roles); err != nil {
			t.Fatal(err)
		}
	}
	sessions := func(userID string) int {
		t.Helper()
		var n int
		if err := e.pool.QueryRow(ctx, `SELECT count(*) FROM console_sessions WHERE user_id = $1`, userID).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	toLogIn := func(what string, res *http.Response) {
		t.Helper()
		if res.StatusCode != http.StatusSeeOther || !strings.HasPrefix(res.Header.Get("Location"), "/console/login") {
			t.Fatalf("%s: %d %s, want the log-in page", what, res.StatusCode, res.Header.Get("Location"))
		}
	}

	c := e.client(acmeHost)
	c.logIn(e.admin.Email, "")
	if res, _ := c.do(http.MethodGet, "/console/customers/"+id+"/forget", nil, nil); res.StatusCode != http.StatusOK {
		t.Fatalf("the forget page as admin: %d", res.StatusCode)
	}
	setRoles(e.admin.ID, "{staff}")
	res, _ := c.do(http.MethodGet, "/console/customers", nil, nil)
	toLogIn("the session after the admin role was taken", res)
	if n := sessions(e.admin.ID); n != 0 {
		t.Fatalf("%d sessions of the demoted user left, want none", n)
	}
	c.logIn(e.admin.Email, "")
	if res, _ := c.do(http.MethodGet, "/console/customers/"+id+"/forget", nil, nil); res.StatusCode != http.StatusForbidden {
		t.Fatalf("the forget page after a log-in as staff: %d, want 403", res.StatusCode)
	}
	setRoles(e.admin.ID, "{staff,admin}")
	if res, _ := c.do(http.MethodGet, "/console/customers/"+id+"/forget", nil, nil); res.StatusCode != http.StatusOK {
		t.Fatalf("the forget page once the admin role is given back: %d, want 200 in the same session", res.StatusCode)
	}
	if _, err := e.pool.Exec(ctx, `DELETE FROM users WHERE id = $1`, e.admin.ID); err != nil {
		t.Fatal(err)
	}
	res, _ = c.do(http.MethodGet, "/console/customers", nil, nil)
	toLogIn("a removed user's session", res)
}

// TestLogInReplacesSession: a log-in never keeps the session value the
// browser brought: a value planted in the browser (here a live session
// of another user) is ended, and the browser gets a new one.
func TestLogInReplacesSession(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	planter := e.client(acmeHost)
	planter.logIn(e.staff.Email, "")
	u := mustURL(t, e.url(acmeHost, "/console/"))
	planted := planter.http.Jar.Cookies(u)
	victim := e.client(acmeHost)
	victim.http.Jar.SetCookies(u, []*http.Cookie{{Name: "clientele_console", Value: planted[0].Value, Path: "/console/"}})
	victim.logIn(e.admin.Email, "")
	if got := victim.http.Jar.Cookies(u); len(got) != 1 || got[0].Value == planted[0].Value {
		t.Fatalf("after the log-in the browser holds %v, want a new session value", got)
	}
	res, _ := planter.do(http.MethodGet, "/console/customers", nil, nil)
	if res.StatusCode != http.StatusSeeOther {
		t.Fatalf("the planted value after the victim's log-in: %d, want the log-in page", res.StatusCode)
	}
	if res, body := victim.do(http.MethodGet, "/console/customers", nil, nil); res.StatusCode != http.StatusOK || !strings.Contains(body, e.admin.Email) {
		t.Fatalf("the victim's page: %d, want the admin's", res.StatusCode)
	}
}
