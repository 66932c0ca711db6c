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

// TestUserReadPerRequest: the session's user is read again on every
// request, so a change of its roles applies to its open session at once,
// and a removed user's session opens nothing. (No command changes or
// removes users yet; the test changes the read model as one would.)
func TestUserReadPerRequest(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	e.mustImport(e.acme, importing.Customers, "external_id\nR-1\n")
	id := e.waitCustomer(e.acme, "external_id", "R-1")
	c := e.client(acmeHost)
	c.logIn(e.admin.Email, "")
	if res, _ := c.do(http.MethodGet, "/console/customers/"+id+"/forget", nil, nil); res.StatusCode != http.StatusOK {
		t.Fatalf("the forget page as admin: %d", res.StatusCode)
	}
	if _, err := e.pool.Exec(ctx, `UPDATE users SET roles = '{staff}' WHERE id = $1`, e.admin.ID); err != nil {
		t.Fatal(err)
	}
	if res, _ := c.do(http.MethodGet, "/console/customers/"+id+"/forget", nil, nil); res.StatusCode != http.StatusForbidden {
		t.Fatalf("the forget page after the admin role was taken: %d, want 403", res.StatusCode)
	}
	if _, err := e.pool.Exec(ctx, `DELETE FROM users WHERE id = $1`, e.admin.ID); err != nil {
		t.Fatal(err)
	}
	res, _ := c.do(http.MethodGet, "/console/customers", nil, nil)
	if res.StatusCode != http.StatusSeeOther || !strings.HasPrefix(res.Header.Get("Location"), "/console/login") {
		t.Fatalf("a removed user's session: %d %s, want the log-in page", res.StatusCode, res.Header.Get("Location"))
	}
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
