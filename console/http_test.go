package console_test

import (
	"bytes"
	"context"
	"fmt"
	"html"
	"io"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/clientele/clientele/commands/imports"
	"github.com/clientele/clientele/domain/access"
	"github.com/clientele/clientele/domain/importing"
	"github.com/clientele/clientele/internal/ingest"
)

// cookieOf returns the Set-Cookie of the session in res.
func cookieOf(t *testing.T, res *http.Response) *http.Cookie {
	t.Helper()
	for _, c := range res.Cookies() {
		if c.Name == "clientele_console" {
			return c
		}
	}
	t.Fatalf("no session cookie in %v", res.Header["Set-Cookie"])
	return nil
}

// TestSessionCookie: a log-in sets an HttpOnly, SameSite=Strict cookie
// for the console's path, Secure only when the request came over TLS
// (X-Forwarded-Proto from the proxy); a log-out ends the session on the
// server, so the old cookie no longer opens a page.
func TestSessionCookie(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	form := url.Values{"email": {e.admin.Email}, "password": {password}}

	c := e.client(acmeHost)
	res, body := c.do(http.MethodPost, "/console/login", form, sameOrigin)
	if res.StatusCode != http.StatusSeeOther {
		t.Fatalf("log-in: %d\n%s", res.StatusCode, body)
	}
	ck := cookieOf(t, res)
	if !ck.HttpOnly || ck.SameSite != http.SameSiteStrictMode || ck.Path != "/console/" || ck.Secure || ck.Domain != "" {
		t.Fatalf("cookie %+v: want HttpOnly, SameSite=Strict, Path=/console/, host-only, not Secure over plain HTTP", ck)
	}
	if len(ck.Value) != 43 {
		t.Fatalf("cookie value %q: want 32 random bytes in base64url", ck.Value)
	}
	var stored int
	if err := e.pool.QueryRow(context.Background(), `SELECT count(*) FROM console_sessions WHERE token_hash = $1`, ck.Value).Scan(&stored); err != nil {
		t.Fatal(err)
	}
	if stored != 0 {
		t.Fatal("the session's value is stored as is; only its hash may be")
	}

	tls := map[string]string{"Sec-Fetch-Site": "same-origin", "X-Forwarded-Proto": "https"}
	res, _ = e.client(acmeHost).do(http.MethodPost, "/console/login", form, tls)
	if ck := cookieOf(t, res); !ck.Secure {
		t.Fatalf("cookie over TLS %+v: want Secure", ck)
	}

	res, body = c.do(http.MethodGet, "/console/customers", nil, nil)
	if res.StatusCode != http.StatusOK || !strings.Contains(body, e.admin.Email) {
		t.Fatalf("page with the session: %d", res.StatusCode)
	}
	res, _ = c.do(http.MethodPost, "/console/logout", url.Values{}, sameOrigin)
	if res.StatusCode != http.StatusSeeOther || cookieOf(t, res).MaxAge >= 0 {
		t.Fatalf("log-out: %d, cookie %v", res.StatusCode, res.Header["Set-Cookie"])
	}
	// The old value, sent again as a copy of the cookie would be.
	old := e.client(acmeHost)
	old.http.Jar.SetCookies(mustURL(t, e.url(acmeHost, "/console/")), []*http.Cookie{{Name: ck.Name, Value: ck.Value, Path: "/console/"}})
	res, _ = old.do(http.MethodGet, "/console/customers", nil, nil)
	if res.StatusCode != http.StatusSeeOther || !strings.HasPrefix(res.Header.Get("Location"), "/console/login") {
		t.Fatalf("page with a logged-out session: %d %s, want the log-in page", res.StatusCode, res.Header.Get("Location"))
	}
}

func mustURL(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// TestCrossOriginFormsRefused: a form sent from another site (as the
// browser says with Sec-Fetch-Site, or with Origin) is refused before it
// acts, the log-in's included; the same form from the console's own
// origin acts.
func TestCrossOriginFormsRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.mustImport(e.acme, importing.Customers, "external_id,email\nX-1,xena@example.com\n")
	id := e.waitCustomer(e.acme, "external_id", "X-1")
	c := e.client(acmeHost)
	c.logIn(e.admin.Email, "")

	for name, h := range map[string]map[string]string{
		"Sec-Fetch-Site cross-site": {"Sec-Fetch-Site": "cross-site"},
		"Sec-Fetch-Site same-site":  {"Sec-Fetch-Site": "same-site"},
		"Origin of another site":    {"Origin": "http://evil.example"},
		"Origin of another company": {"Origin": e.url(globexHost, "")},
	} {
		res, body := c.do(http.MethodPost, "/console/customers/"+id+"/forget", url.Values{}, h)
		if res.StatusCode != http.StatusForbidden || !strings.Contains(body, "another site") {
			t.Errorf("%s: forget answered %d, want 403", name, res.StatusCode)
		}
		res, _ = e.client(acmeHost).do(http.MethodPost, "/console/login",
			url.Values{"email": {e.admin.Email}, "password": {password}}, h)
		if res.StatusCode != http.StatusForbidden {
			t.Errorf("%s: log-in answered %d, want 403", name, res.StatusCode)
		}
	}
	var runs int
	if err := e.pool.QueryRow(context.Background(), `SELECT count(*) FROM import_runs WHERE source = 'console'`).Scan(&runs); err != nil {
		t.Fatal(err)
	}
	if runs != 0 {
		t.Fatalf("a refused form staged %d runs", runs)
	}
	res, body := c.do(http.MethodPost, "/console/customers/"+id+"/forget", url.Values{}, sameOrigin)
	if res.StatusCode != http.StatusSeeOther {
		t.Fatalf("forget from the console's origin: %d\n%s", res.StatusCode, body)
	}
	runID := regexp.MustCompile(`run=([0-9a-f]+)`).FindStringSubmatch(res.Header.Get("Location"))
	if runID == nil {
		t.Fatalf("forget sent to %s, want the customer's page with its run", res.Header.Get("Location"))
	}
	if state := e.waitRun(runID[1]); state != "completed" {
		t.Fatalf("the forget's run is %s", state)
	}
	_, body = c.do(http.MethodGet, "/console/customers/"+id, nil, nil)
	if !strings.Contains(body, `id="forgotten"`) || strings.Contains(body, "xena@example.com") {
		t.Fatalf("after the forget the page is not a forgotten customer's:\n%s", body)
	}
}

// cspWant is the policy every console answer carries.
const cspWant = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

// TestSameOriginBehindTLSProxy: behind a proxy that ends TLS, a browser
// too old for Sec-Fetch-Site sends Origin https://<host>; the server sees
// plain HTTP with the same Host, and the form is accepted (the check is
// by host and port, not scheme), its cookie Secure.
func TestSameOriginBehindTLSProxy(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	origin := strings.Replace(e.url(acmeHost, ""), "http://", "https://", 1)
	res, body := e.client(acmeHost).do(http.MethodPost, "/console/login",
		url.Values{"email": {e.admin.Email}, "password": {password}},
		map[string]string{"Origin": origin, "X-Forwarded-Proto": "https"})
	if res.StatusCode != http.StatusSeeOther {
		t.Fatalf("log-in from %s through the proxy: %d\n%s", origin, res.StatusCode, body)
	}
	if ck := cookieOf(t, res); !ck.Secure {
		t.Fatalf("cookie %+v: want Secure", ck)
	}
}

// TestSecurityHeaders: every page, error pages included, carries the
// strict Content-Security-Policy and is never framed; no page holds an
// inline script, an event handler attribute or an inline style, which
// the policy would block.
func TestSecurityHeaders(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.mustImport(e.acme, importing.Customers, "external_id,email\nH-1,hal@example.com\n")
	id := e.waitCustomer(e.acme, "external_id", "H-1")
	anon := e.client(acmeHost)
	c := e.client(acmeHost)
	c.logIn(e.admin.Email, "")
	inline := regexp.MustCompile(`(?i)\son[a-z]+=|\sstyle=|<style`)
	scripts := regexp.MustCompile(`(?is)<script([^>]*)>(.*?)</script>`)
	for _, p := range []struct {
		c    *client
		path string
		want int
	}{
		{anon, "/console/login", 200},
		{anon, "/console/nothing-here", 404},
		{c, "/console/customers", 200},
		{c, "/console/customers?f=email&v=hal@example.com", 200},
		{c, "/console/customers/" + id, 200},
		{c, "/console/customers/" + id + "/forget", 200},
		{c, "/console/customers/nobody", 404},
		{c, "/console/imports", 200},
	} {
		res, body := p.c.do(http.MethodGet, p.path, nil, nil)
		if res.StatusCode != p.want {
			t.Errorf("GET %s: %d, want %d", p.path, res.StatusCode, p.want)
		}
		if res.StatusCode == http.StatusNotFound && p.c == anon {
			continue // no console route: the API's 404
		}
		if got := res.Header.Get("Content-Security-Policy"); got != cspWant {
			t.Errorf("GET %s: Content-Security-Policy %q, want %q", p.path, got, cspWant)
		}
		if res.Header.Get("X-Frame-Options") != "DENY" || res.Header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("GET %s: headers %v", p.path, res.Header)
		}
		if m := inline.FindString(body); m != "" {
			t.Errorf("GET %s: inline handler or style %q", p.path, m)
		}
		for _, m := range scripts.FindAllStringSubmatch(body, -1) {
			if !strings.Contains(m[1], `src="/console/static/`) || strings.TrimSpace(m[2]) != "" {
				t.Errorf("GET %s: inline or foreign script %q", p.path, m[0])
			}
		}
		if strings.Count(body, "<script") != len(scripts.FindAllString(body, -1)) {
			t.Errorf("GET %s: a script tag not closed as expected", p.path)
		}
	}
	res, _ := anon.do(http.MethodGet, "/console/static/console.js", nil, nil)
	if res.StatusCode != 200 || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/javascript") {
		t.Errorf("console.js: %d %s", res.StatusCode, res.Header.Get("Content-Type"))
	}
	res, _ = anon.do(http.MethodGet, "/", nil, nil)
	if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/console/" {
		t.Errorf("GET /: %d %s, want a redirect to /console/", res.StatusCode, res.Header.Get("Location"))
	}
}

// TestOtherCompanyUnreachable: a session of one company is no session
// on another company's host, a user logs in only on its own company's
// host, and another company's customer is not found.
func TestOtherCompanyUnreachable(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.mustImport(e.globex, importing.Customers, "external_id,email\nG-1,gil@example.com\n")
	globexCustomer := e.waitCustomer(e.globex, "external_id", "G-1")

	c := e.client(acmeHost)
	c.logIn(e.admin.Email, "")
	var value string
	for _, ck := range c.http.Jar.Cookies(mustURL(t, e.url(acmeHost, "/console/"))) {
		value = ck.Value
	}
	// The acme cookie carried to globex's host.
	g := e.client(globexHost)
	g.http.Jar.SetCookies(mustURL(t, e.url(globexHost, "/console/")), []*http.Cookie{{Name: "clientele_console", Value: value, Path: "/console/"}})
	res, _ := g.do(http.MethodGet, "/console/customers", nil, nil)
	if res.StatusCode != http.StatusSeeOther || !strings.HasPrefix(res.Header.Get("Location"), "/console/login") {
		t.Fatalf("acme's session on globex's host: %d %s, want the log-in page", res.StatusCode, res.Header.Get("Location"))
	}
	// acme's admin cannot log in on globex's host.
	res, _ = e.client(globexHost).do(http.MethodPost, "/console/login",
		url.Values{"email": {e.admin.Email}, "password": {password}}, sameOrigin)
	if res.StatusCode != http.StatusUnauthorized {
		t.Fatalf("acme's admin logging in on globex's host: %d, want 401", res.StatusCode)
	}
	// globex's customer through acme's console.
	res, body := c.do(http.MethodGet, "/console/customers/"+globexCustomer, nil, nil)
	if res.StatusCode != http.StatusNotFound || strings.Contains(body, "gil@example.com") {
		t.Fatalf("globex's customer on acme's console: %d", res.StatusCode)
	}
	res, body = c.do(http.MethodGet, "/console/customers?f=email&v=gil@example.com", nil, nil)
	if res.StatusCode != http.StatusOK || strings.Contains(body, "gil@example.com</td>") {
		t.Fatalf("acme's search finds globex's customer: %d", res.StatusCode)
	}
}

// TestLogInRateLimited: failed log-ins are limited as the API's are, so
// after the burst even the right password is refused, 429 with
// Retry-After, and the limit is the API's own (the account's failures
// through the console count for POST /api/access-tokens/ too).
func TestLogInRateLimited(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := e.client(acmeHost)
	bad := url.Values{"email": {e.staff.Email}, "password": {"not the password"}}
	failed := 0
	began := time.Now()
	for ; failed < 100; failed++ {
		res, body := c.do(http.MethodPost, "/console/login", bad, sameOrigin)
		if res.StatusCode == http.StatusTooManyRequests {
			if res.Header.Get("Retry-After") == "" || !strings.Contains(body, "too many failed log-ins") {
				t.Fatalf("429 without Retry-After or reason: %v\n%s", res.Header, body)
			}
			break
		}
		if res.StatusCode != http.StatusUnauthorized {
			t.Fatalf("failed log-in %d: %d", failed, res.StatusCode)
		}
	}
	// The API's burst of 10, and one more for every 6 s the failures
	// took (seconds under -race on a loaded machine).
	if most := 10 + int(time.Since(began)/(6*time.Second)); failed < 10 || failed > most {
		t.Fatalf("refused after %d failed log-ins, want the API's burst of 10 (at most %d after %v)", failed, most, time.Since(began))
	}
	res, _ := c.do(http.MethodPost, "/console/login", url.Values{"email": {e.staff.Email}, "password": {password}}, sameOrigin)
	if res.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("right password while limited: %d, want 429", res.StatusCode)
	}
	req, err := http.NewRequest(http.MethodPost, e.url(acmeHost, "/api/access-tokens/"), nil)
	if err != nil {
		t.Fatal(err)
	}
	req.SetBasicAuth(e.staff.Email, password)
	apiRes, err := c.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	apiRes.Body.Close()
	if apiRes.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("the API's log-in after the console's failures: %d, want 429 (one limit for both)", apiRes.StatusCode)
	}
}

// TestStaffForbidden: a staff user's delete or forget is refused with a
// 403 page and stages nothing.
func TestStaffForbidden(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.mustImport(e.acme, importing.Customers, "external_id\nF-1\n")
	id := e.waitCustomer(e.acme, "external_id", "F-1")
	c := e.client(acmeHost)
	c.logIn(e.staff.Email, "")
	for _, m := range []string{http.MethodGet, http.MethodPost} {
		for _, a := range []string{"delete", "forget"} {
			var form url.Values
			if m == http.MethodPost {
				form = url.Values{}
			}
			res, body := c.do(m, "/console/customers/"+id+"/"+a, form, sameOrigin)
			if res.StatusCode != http.StatusForbidden || !strings.Contains(body, "admin role") {
				t.Errorf("%s %s as staff: %d, want the 403 page", m, a, res.StatusCode)
			}
		}
	}
	var runs int
	if err := e.pool.QueryRow(context.Background(), `SELECT count(*) FROM import_runs WHERE source = 'console'`).Scan(&runs); err != nil {
		t.Fatal(err)
	}
	if runs != 0 {
		t.Fatalf("a staff user's refused forget staged %d runs", runs)
	}
}

// TestDeleteThenForget deletes a customer from its page, then forgets
// it: the deleted customer keeps its history on its page (and leaves
// retrieval), the forgotten one shows as forgotten.
func TestDeleteThenForget(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.mustImport(e.acme, importing.Customers, "external_id,email\nD-1,dan@example.com\n")
	id := e.waitCustomer(e.acme, "external_id", "D-1")
	c := e.client(acmeHost)
	c.logIn(e.admin.Email, "")
	act := func(action string) string {
		t.Helper()
		_, body := c.do(http.MethodGet, "/console/customers/"+id+"/"+action, nil, nil)
		if !strings.Contains(body, "cannot be undone") || !strings.Contains(body, "dan@example.com") && !strings.Contains(body, "customer_token") {
			t.Fatalf("the %s confirmation does not say what it cannot undo, or whom:\n%s", action, body)
		}
		res, body := c.do(http.MethodPost, "/console/customers/"+id+"/"+action, url.Values{}, sameOrigin)
		m := regexp.MustCompile(`run=([0-9a-f]+)`).FindStringSubmatch(res.Header.Get("Location"))
		if res.StatusCode != http.StatusSeeOther || m == nil {
			t.Fatalf("%s: %d %s\n%s", action, res.StatusCode, res.Header.Get("Location"), body)
		}
		if state := e.waitRun(m[1]); state != "completed" {
			t.Fatalf("%s run: %s", action, state)
		}
		_, body = c.do(http.MethodGet, "/console/customers/"+id+"?run="+m[1], nil, nil)
		if !strings.Contains(body, "accepted <span data-count=\"accepted\">1</span>") {
			t.Fatalf("%s: the run did not accept the record:\n%s", action, body)
		}
		return body
	}
	body := act("delete")
	if !strings.Contains(body, `id="deleted"`) || !strings.Contains(body, "CustomerDeleted") || strings.Contains(body, `id="delete"`) {
		t.Fatalf("after the delete the page is not a deleted customer's with its history:\n%s", body)
	}
	body = act("forget")
	if !strings.Contains(body, `id="forgotten"`) || strings.Contains(body, "dan@example.com") {
		t.Fatalf("after the forget the page is not a forgotten customer's:\n%s", body)
	}
}

// TestPaging: the customer list and a run's rejections are paged, each
// page linking to the next.
func TestPaging(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var csv strings.Builder
	csv.WriteString("external_id,tags\n")
	for i := range 55 {
		fmt.Fprintf(&csv, "P-%02d,paged\n", i)
	}
	e.mustImport(e.acme, importing.Customers, csv.String())
	e.waitCustomer(e.acme, "external_id", "P-54")
	c := e.client(acmeHost)
	c.logIn(e.staff.Email, "")
	next := regexp.MustCompile(`href="([^"]+)" id="next"`)
	_, body := c.do(http.MethodGet, "/console/customers?f=tags&v=paged", nil, nil)
	if n := strings.Count(body, `class="open"`); n != 50 {
		t.Fatalf("first page lists %d customers, want 50", n)
	}
	m := next.FindStringSubmatch(body)
	if m == nil {
		t.Fatal("the first page links to no next page")
	}
	_, body = c.do(http.MethodGet, html.UnescapeString(m[1]), nil, nil)
	if n := strings.Count(body, `class="open"`); n != 5 || next.MatchString(body) || !strings.Contains(body, "P-54") {
		t.Fatalf("second page lists %d customers (want 5, the last, and no next page)", n)
	}

	// A run of 60 records that are all rejected.
	csv.Reset()
	csv.WriteString("external_id,email\n")
	for i := range 60 {
		fmt.Fprintf(&csv, "R-%02d,not-an-email-%d\n", i, i)
	}
	up, err := e.uploads.Handle(context.Background(), imports.StageUpload{
		Principal: access.Principal{CompanyID: e.acme.ID, UserID: e.admin.ID, Roles: []access.Role{access.RoleAdmin}},
		Entity:    importing.Customers, Format: ingest.CSV, Body: strings.NewReader(csv.String()),
	})
	if err != nil {
		t.Fatal(err)
	}
	e.waitRun(up.RunID)
	_, body = c.do(http.MethodGet, "/console/imports/"+up.RunID, nil, nil)
	if n := strings.Count(body, "<li>record "); n != 50 || !strings.Contains(body, "rejected <span data-count=\"rejected\">60</span>") {
		t.Fatalf("run page lists %d rejections, want 50 of 60", n)
	}
	m = regexp.MustCompile(`href="([^"]+)">Next rejections`).FindStringSubmatch(body)
	if m == nil {
		t.Fatal("the run page links to no next page of rejections")
	}
	_, body = c.do(http.MethodGet, html.UnescapeString(m[1]), nil, nil)
	if n := strings.Count(body, "<li>record "); n != 10 || !strings.Contains(body, "record 59 ") {
		t.Fatalf("second page of rejections lists %d, want the last 10", n)
	}
}

// TestUploadRefused: an upload that is not the console's form, or of an
// entity the server does not import, is refused and stages nothing; a
// good one answers the scripts with the run's page.
func TestUploadRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := e.client(acmeHost)
	c.logIn(e.admin.Email, "")
	send := func(entity, name, ctype, content string) (*http.Response, string) {
		t.Helper()
		var b bytes.Buffer
		w := multipart.NewWriter(&b)
		if entity != "" {
			_ = w.WriteField("entity", entity)
		}
		h := textproto.MIMEHeader{}
		h.Set("Content-Disposition", fmt.Sprintf(`form-data; name="file"; filename=%q`, name))
		if ctype != "" {
			h.Set("Content-Type", ctype)
		}
		part, err := w.CreatePart(h)
		if err != nil {
			t.Fatal(err)
		}
		part.Write([]byte(content))
		w.Close()
		req, err := http.NewRequest(http.MethodPost, e.url(acmeHost, "/console/uploads"), &b)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", w.FormDataContentType())
		req.Header.Set("Accept", "application/json")
		req.Header.Set("Sec-Fetch-Site", "same-origin")
		res, err := c.http.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		body, _ := io.ReadAll(res.Body)
		return res, string(body)
	}
	for _, tc := range []struct{ entity, name, ctype, want string }{
		{"planets", "p.csv", "text/csv", "unknown entity"},
		{"", "p.csv", "text/csv", "unknown entity"},
		{"customers", "p.txt", "", "neither CSV"},
		{"customers", "p.xml", "application/xml", "uploads are JSON"},
		{"customers", "p.json", "application/json", "JSON"},
	} {
		content := "external_id\nA-1\n"
		if tc.name == "p.json" {
			content = "{not json"
		}
		res, body := send(tc.entity, tc.name, tc.ctype, content)
		if res.StatusCode != http.StatusBadRequest || !strings.Contains(body, tc.want) {
			t.Errorf("upload %+v: %d %s, want 400 saying %q", tc, res.StatusCode, body, tc.want)
		}
	}
	var runs int
	if err := e.pool.QueryRow(context.Background(), `SELECT count(*) FROM import_runs WHERE state <> 'receiving'`).Scan(&runs); err != nil {
		t.Fatal(err)
	}
	if runs != 0 {
		t.Fatalf("refused uploads scheduled %d runs", runs)
	}
	res, body := send("customers", "ok.csv", "", "external_id\nA-1\n")
	if res.StatusCode != http.StatusOK || !strings.Contains(body, `"url":"/console/imports/`) {
		t.Fatalf("good upload: %d %s", res.StatusCode, body)
	}
	res, body = c.do(http.MethodPost, "/console/uploads", url.Values{"entity": {"customers"}}, sameOrigin)
	if res.StatusCode != http.StatusBadRequest || !strings.Contains(body, "multipart/form-data") {
		t.Fatalf("a form that is no upload: %d", res.StatusCode)
	}
}
