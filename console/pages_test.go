package console_test

import (
	"context"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/clientele/clientele/commands"
	"github.com/clientele/clientele/domain/access"
	"github.com/clientele/clientele/domain/importing"
	"github.com/clientele/clientele/readmodels"
)

// TestOverviewPage: the home after log-in is the overview: the day's
// accepted and rejected records in the chart and its totals, the
// projections' lag, and the failing outlet with its last failure.
func TestOverviewPage(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.mustImport(e.acme, importing.Customers, "external_id,email\nO-1,olga@example.com\nO-2,oscar@example.com\n")
	c := e.client(acmeHost)
	c.logIn(e.staff.Email, "")
	res, body := c.do(http.MethodGet, "/console/", nil, nil)
	if res.StatusCode != http.StatusOK || !strings.Contains(body, `id="imports-chart"`) {
		t.Fatalf("GET /console/: %d\n%s", res.StatusCode, body)
	}
	if !strings.Contains(body, `id="accepted-total">2<`) || !strings.Contains(body, `id="rejected-total">0<`) {
		t.Errorf("the overview's totals are not the run's 2 accepted, 0 rejected:\n%s", body)
	}
	if !regexp.MustCompile(`<rect class="chart-ok"[^>]*><title>[^<]*: 2 accepted</title>`).MatchString(body) {
		t.Errorf("no bar of 2 accepted records in the chart:\n%s", body)
	}
	// The headline figures: the 2 customers, new this week.
	for _, want := range []string{`id="figure-customers"`, `id="figure-new"`, `id="figure-events"`, `id="figure-revenue"`, "0.00 EUR"} {
		if !strings.Contains(body, want) {
			t.Errorf("the overview lacks %s", want)
		}
	}
	// The projections' lag is the operator's page.
	_, ops := c.do(http.MethodGet, "/console/operations", nil, nil)
	for _, name := range []string{"customers", "events", "sales", "campaign_stats"} {
		if !strings.Contains(ops, "<td>"+name+"</td>") {
			t.Errorf("the lag lists no projection %s", name)
		}
	}
	if !strings.Contains(body, "None: every outlet delivers.") {
		t.Errorf("failing outlets listed before any outlet exists")
	}

	dt, outlet := e.failingOutlet(1)
	_, body = c.do(http.MethodGet, "/console/", nil, nil)
	if !strings.Contains(body, `href="/console/datatargets/`+dt+`/outlets/`+outlet+`"`) || !strings.Contains(body, "ERP orders") ||
		!strings.Contains(body, "HTTP 500") && !strings.Contains(body, "500") {
		t.Fatalf("the overview does not list the failing outlet:\n%s", body)
	}
	if strings.Contains(body, "s3cret") {
		t.Errorf("a staff user sees the outlet's query credential on the overview")
	}
	if !strings.Contains(body, `class="attempt" href="/console/datatargets/`+dt+`/outlets/`+outlet+`/log/1"`) {
		t.Errorf("the failing outlet does not link its last attempt:\n%s", body)
	}
}

// TestDatatargetPages: a datatarget's messages paged, its outlet's state
// and attempt log, and an attempt's raw request and reply, with the
// credentials masked for staff and shown to admins, as the API does.
func TestDatatargetPages(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	dt, outlet := e.failingOutlet(60)
	staff := e.client(acmeHost)
	staff.logIn(e.staff.Email, "")

	_, body := staff.do(http.MethodGet, "/console/datatargets", nil, nil)
	if !strings.Contains(body, "ERP orders") || !strings.Contains(body, "<td>60</td>") || !strings.Contains(body, "1 failing") {
		t.Fatalf("datatargets list:\n%s", body)
	}
	_, body = staff.do(http.MethodGet, "/console/datatargets/"+dt, nil, nil)
	if n := strings.Count(body, `<span class="number">`); n != 50 || !strings.Contains(body, "&#34;order&#34;: 60") ||
		strings.Index(body, "#60<") > strings.Index(body, "#11<") || strings.Contains(body, "#10<") {
		t.Fatalf("the first page shows %d messages, want 60 down to 11:\n%s", n, body)
	}
	if !strings.Contains(body, "failing (") {
		t.Errorf("the outlet is not shown failing")
	}
	m := regexp.MustCompile(`href="([^"]+)" id="older"`).FindStringSubmatch(body)
	if m == nil {
		t.Fatal("no page of older messages")
	}
	_, body = staff.do(http.MethodGet, html.UnescapeString(m[1]), nil, nil)
	if n := strings.Count(body, `<span class="number">`); n != 10 || !strings.Contains(body, "#10<") || !strings.Contains(body, "#1<") ||
		strings.Contains(body, `id="older"`) || !strings.Contains(body, `id="newer"`) {
		t.Fatalf("the second page shows %d messages, want 10 down to 1, a newer page and no older one", n)
	}

	_, body = staff.do(http.MethodGet, "/console/datatargets/"+dt+"/outlets/"+outlet, nil, nil)
	if !strings.Contains(body, "Attempts (") || !strings.Contains(body, `class="failed"`) || !strings.Contains(body, "<td>500</td>") {
		t.Fatalf("outlet page without its failed attempt:\n%s", body)
	}
	if strings.Contains(body, "very-secret-key") || strings.Contains(body, "s3cret") {
		t.Fatal("a staff user sees the outlet's credentials")
	}
	_, body = staff.do(http.MethodGet, "/console/datatargets/"+dt+"/outlets/"+outlet+"/log/1", nil, nil)
	for _, want := range []string{`id="attempt-request"`, "POST /hook?key=****", "X-Api-Key: ****", `id="attempt-reply"`,
		"HTTP/1.1 500", "the receiver is down", "message 1"} {
		if !strings.Contains(body, want) && !strings.Contains(html.UnescapeString(body), want) {
			t.Errorf("the attempt page lacks %q", want)
		}
	}
	if strings.Contains(body, "very-secret-key") || strings.Contains(body, "s3cret") {
		t.Fatal("a staff user sees the attempt's credentials")
	}
	admin := e.client(acmeHost)
	admin.logIn(e.admin.Email, "")
	_, body = admin.do(http.MethodGet, "/console/datatargets/"+dt+"/outlets/"+outlet+"/log/1", nil, nil)
	// The URL's query is the admin's to read; the header values, sealed
	// at rest, no one's.
	if !strings.Contains(body, "X-Api-Key: ****") || strings.Contains(body, "very-secret-key") || !strings.Contains(body, "key=s3cret") {
		t.Errorf("an admin does not see the attempt's request with its header values masked")
	}
	res, _ := admin.do(http.MethodGet, "/console/datatargets/"+dt+"/outlets/"+outlet+"/log/99", nil, nil)
	if res.StatusCode != http.StatusNotFound {
		t.Errorf("an attempt that does not exist: %d, want 404", res.StatusCode)
	}
	// Another company's datatarget is not found.
	g := e.client(globexHost)
	g.logIn(e.globexAdmin.Email, "")
	res, body = g.do(http.MethodGet, "/console/datatargets/"+dt, nil, nil)
	if res.StatusCode != http.StatusNotFound || strings.Contains(body, "ERP orders") {
		t.Errorf("acme's datatarget on globex's console: %d", res.StatusCode)
	}
}

// TestCampaignPages: the list shows a campaign's figures, its page the
// funnel and the sales charts, from the campaign statistics projection.
func TestCampaignPages(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	token := e.apiToken()
	e.mustImport(e.acme, importing.Customers, "external_id,email\nA,a@example.com\nB,b@example.com\n")
	if status, body := e.apiCall(token, http.MethodPost, "/api/campaigns/", `{"campaign_key": "spring", "kind": "email",
		"name": "Spring sale", "state": "active", "activated_at": "2025-01-01T00:00:00Z"}`); status != http.StatusOK {
		t.Fatalf("create campaign: %d %s", status, body)
	}
	e.mustImport(e.acme, importing.Events, "type,date,customer_id,campaign_key\n"+
		"MAIL_SENT,2025-01-01T10:00:00Z,A,spring\nMAIL_SENT,2025-01-01T10:00:00Z,B,spring\nMAIL_OPEN,2025-01-02T10:00:00Z,A,spring\n")
	e.mustImport(e.acme, importing.Sales, "sale_external_id,sale_date,sale_customer_id,product_id,quantity,unit_price\nS-1,2025-01-05,A,P1,2,500\n")
	c := e.client(acmeHost)
	c.logIn(e.staff.Email, "")
	body := c.waitPage("/console/campaigns/spring", "<th>sales</th><td>1</td>")
	for _, want := range []string{`id="funnel"`, `<title>sent: 2 events</title>`, `<title>opens: 1 events</title>`,
		"<th>audience</th><td>2</td>", "<th>revenue</th><td>10.00 EUR</td>", `id="categories"`, "Uncategorised: 10.00 revenue"} {
		if !strings.Contains(body, want) {
			t.Errorf("the campaign page lacks %q", want)
		}
	}
	_, body = c.do(http.MethodGet, "/console/campaigns", nil, nil)
	if !strings.Contains(body, `href="/console/campaigns/spring">Spring sale</a>`) || !strings.Contains(body, "<td>10.00 EUR</td>") {
		t.Errorf("the campaigns list lacks spring's figures:\n%s", body)
	}
	// The window is the beta endpoint's: a window without the sale.
	_, body = c.do(http.MethodGet, "/console/campaigns/spring?sales_start=2025-02-01&sales_end=2025-02-28", nil, nil)
	if !strings.Contains(body, "2025-02-01 to 2025-02-28") || !strings.Contains(body, "<th>sales</th><td>0</td>") {
		t.Errorf("the page with a window of February still counts the January sale")
	}
	res, _ := c.do(http.MethodGet, "/console/campaigns/spring?sales_start=nope", nil, nil)
	if res.StatusCode != http.StatusBadRequest {
		t.Errorf("a bad sales_start: %d, want 400", res.StatusCode)
	}
	res, _ = c.do(http.MethodGet, "/console/campaigns/autumn", nil, nil)
	if res.StatusCode != http.StatusNotFound {
		t.Errorf("an unknown campaign: %d, want 404", res.StatusCode)
	}
}

// TestAccessPage: an admin creates a scoped token and sees its value once
// (the value then works on the API, within its scope), creates an
// integration and a token for it, adds and removes an SFTP key; a staff
// user sees only its own tokens and gets the commands' 403 for what needs
// the admin role.
func TestAccessPage(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	admin := e.client(acmeHost)
	admin.logIn(e.admin.Email, "")
	res, _ := admin.do(http.MethodPost, "/console/access/tokens", url.Values{
		"name": {"reader"}, "scopes": {"GET /api/data/customers/\n"}}, sameOrigin)
	if res.StatusCode != http.StatusSeeOther || !strings.HasPrefix(res.Header.Get("Location"), "/console/access?created=") {
		t.Fatalf("create token: %d to %q, want a redirect to the page that shows it", res.StatusCode, res.Header.Get("Location"))
	}
	created := res.Header.Get("Location")
	res, body := admin.do(http.MethodGet, created, nil, nil)
	if res.StatusCode != http.StatusOK || res.Header.Get("Cache-Control") != "no-store" {
		t.Fatalf("the created token's page: %d %s", res.StatusCode, res.Header.Get("Cache-Control"))
	}
	m := regexp.MustCompile(`<pre class="raw" id="token-value">([^<]+)</pre>`).FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("the new token's value is not shown:\n%s", body)
	}
	value := m[1]
	if status, _ := e.apiCall(value, http.MethodGet, "/api/data/customers/", ""); status != http.StatusOK {
		t.Errorf("the token on its scope: %d", status)
	}
	if status, _ := e.apiCall(value, http.MethodGet, "/api/integrations/", ""); status != http.StatusForbidden {
		t.Errorf("the token outside its scope: %d, want 403", status)
	}
	// The page reloaded (its address still names the token) shows the
	// value no more and creates nothing.
	_, body = admin.do(http.MethodGet, created, nil, nil)
	if strings.Contains(body, value) || !strings.Contains(body, "<td>reader</td>") || strings.Count(body, "<td>reader</td>") != 1 || !strings.Contains(body, "GET /api/data/customers/") {
		t.Fatalf("the access page shows the token's value again, or not the token:\n%s", body)
	}

	res, body = admin.do(http.MethodPost, "/console/access/integrations", url.Values{"name": {"Webshop"}, "integration_name": {"shop"}}, sameOrigin)
	if res.StatusCode != http.StatusSeeOther {
		t.Fatalf("create integration: %d\n%s", res.StatusCode, body)
	}
	_, body = admin.do(http.MethodGet, "/console/access", nil, nil)
	im := regexp.MustCompile(`<option value="(integrations/[0-9a-f]+)"`).FindStringSubmatch(body)
	if !strings.Contains(body, "<td>Webshop</td>") || im == nil {
		t.Fatalf("the integration is not listed nor offered as an owner:\n%s", body)
	}
	// Tokens are listed by their owners' and creators' names, not ids.
	if !strings.Contains(body, "<td>"+e.admin.Email+"</td>") || strings.Contains(body, "<td>users/") {
		t.Errorf("the tokens' owners are not named by email:\n%s", body)
	}
	res, body = admin.postThenGet("/console/access/tokens", url.Values{"name": {"shop token"}, "owner": {im[1]}})
	if !strings.Contains(body, "<td>the integration Webshop</td>") {
		t.Errorf("the integration's token is not listed as the integration's")
	}
	if res.StatusCode != http.StatusOK || !strings.Contains(body, `id="token-value"`) {
		t.Fatalf("token for the integration: %d", res.StatusCode)
	}
	res, body = admin.do(http.MethodPost, "/console/access/tokens", url.Values{"scopes": {"GET /a b c"}}, sameOrigin)
	if res.StatusCode != http.StatusBadRequest || !strings.Contains(body, `id="access-error"`) {
		t.Errorf("a malformed scope: %d, want 400 with the form's error", res.StatusCode)
	}

	const key = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl laptop"
	res, body = admin.do(http.MethodPost, "/console/access/sftp-keys", url.Values{"public_key": {key}, "name": {"laptop"}}, sameOrigin)
	if res.StatusCode != http.StatusSeeOther {
		t.Fatalf("add SFTP key: %d\n%s", res.StatusCode, body)
	}
	_, body = admin.do(http.MethodGet, "/console/access", nil, nil)
	km := regexp.MustCompile(`action="/console/access/sftp-keys/([0-9a-f]+)/remove"`).FindStringSubmatch(body)
	if km == nil || !strings.Contains(body, "SHA256:") {
		t.Fatalf("the SFTP key is not listed:\n%s", body)
	}

	staff := e.client(acmeHost)
	staff.logIn(e.staff.Email, "")
	_, body = staff.do(http.MethodGet, "/console/access", nil, nil)
	if strings.Contains(body, "<td>reader</td>") || strings.Contains(body, "SHA256:") || !strings.Contains(body, "<td>Webshop</td>") {
		t.Errorf("a staff user sees another user's tokens or the SFTP keys, or not the integrations:\n%s", body)
	}
	// Staff are not shown the forms only admins may send: creating an
	// integration, a token for one, adding an SFTP key.
	for _, form := range []string{`id="integration-form"`, `id="token-owner"`, `id="token-transfer"`, `id="sftp-key-form"`} {
		if strings.Contains(body, form) {
			t.Errorf("a staff user is shown %s", form)
		}
	}
	if !strings.Contains(body, `id="token-form"`) {
		t.Error("a staff user is not shown the form for its own tokens")
	}
	for _, f := range []struct {
		path string
		form url.Values
	}{
		{"/console/access/integrations", url.Values{"name": {"Sneaky"}}},
		{"/console/access/tokens", url.Values{"owner": {im[1]}}},
		{"/console/access/sftp-keys", url.Values{"public_key": {key}}},
		{"/console/access/sftp-keys/" + km[1] + "/remove", url.Values{}},
	} {
		res, body := staff.do(http.MethodPost, f.path, f.form, sameOrigin)
		if res.StatusCode != http.StatusForbidden || !strings.Contains(body, "admin") || !strings.Contains(body, `id="error-title"`) {
			t.Errorf("staff POST %s: %d, want the 403 page", f.path, res.StatusCode)
		}
	}
	var integrations int
	if err := e.pool.QueryRow(context.Background(), `SELECT count(*) FROM integrations WHERE name = 'Sneaky'`).Scan(&integrations); err != nil {
		t.Fatal(err)
	}
	if integrations != 0 {
		t.Error("a staff user's refused form created an integration")
	}
	// Forms from another site are refused before they act.
	res, _ = admin.do(http.MethodPost, "/console/access/tokens", url.Values{}, map[string]string{"Sec-Fetch-Site": "cross-site"})
	if res.StatusCode != http.StatusForbidden {
		t.Errorf("a cross-site token form: %d, want 403", res.StatusCode)
	}
	res, _ = admin.do(http.MethodPost, "/console/access/sftp-keys/"+km[1]+"/remove", url.Values{}, sameOrigin)
	if res.StatusCode != http.StatusSeeOther {
		t.Fatalf("remove SFTP key: %d", res.StatusCode)
	}
	_, body = admin.do(http.MethodGet, "/console/access", nil, nil)
	if strings.Contains(body, "SHA256:") {
		t.Error("the removed SFTP key is still listed")
	}
}

// TestPagesSecure: the overview, datatarget, campaign and access pages carry the console's
// Content-Security-Policy, hold no inline style or handler (the charts
// are styled by class), and send the logged-out to the log-in page.
func TestPagesSecure(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.mustImport(e.acme, importing.Customers, "external_id\nZ-1\n")
	dt, outlet := e.failingOutlet(1)
	c := e.client(acmeHost)
	c.logIn(e.admin.Email, "")
	inline := regexp.MustCompile(`(?i)\son[a-z]+=|\sstyle=|<style|<script>`)
	for _, p := range []string{"/console/", "/console/datatargets", "/console/datatargets/" + dt,
		"/console/datatargets/" + dt + "/outlets/" + outlet, "/console/datatargets/" + dt + "/outlets/" + outlet + "/log/1",
		"/console/campaigns", "/console/access"} {
		res, body := c.do(http.MethodGet, p, nil, nil)
		if res.StatusCode != http.StatusOK || res.Header.Get("Content-Security-Policy") != cspWant {
			t.Errorf("GET %s: %d, CSP %q", p, res.StatusCode, res.Header.Get("Content-Security-Policy"))
		}
		if m := inline.FindString(body); m != "" {
			t.Errorf("GET %s: inline %q", p, m)
		}
		res, _ = e.client(acmeHost).do(http.MethodGet, p, nil, nil)
		if res.StatusCode != http.StatusSeeOther || !strings.HasPrefix(res.Header.Get("Location"), "/console/login") {
			t.Errorf("GET %s logged out: %d %s", p, res.StatusCode, res.Header.Get("Location"))
		}
	}
}

// TestRevokeToken: a token revoked on the access page, or with
// DELETE /api/access-tokens/<id>/, stops working at once; a staff user
// revokes its own tokens only (403 for another's), an admin any.
func TestRevokeToken(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tokenRe := regexp.MustCompile(`<pre class="raw" id="token-value">([^<]+)</pre>`)
	revokeRe := regexp.MustCompile(`action="(/console/access/tokens/[0-9a-f]+/revoke)"`)
	create := func(c *client, name string) (value, revoke string) {
		t.Helper()
		_, body := c.postThenGet("/console/access/tokens", url.Values{"name": {name}})
		m := tokenRe.FindStringSubmatch(body)
		if m == nil {
			t.Fatalf("no token value shown:\n%s", body)
		}
		_, body = c.do(http.MethodGet, "/console/access", nil, nil)
		r := revokeRe.FindAllStringSubmatch(body, -1)
		return m[1], r[len(r)-1][1]
	}
	admin := e.client(acmeHost)
	admin.logIn(e.admin.Email, "")
	staff := e.client(acmeHost)
	staff.logIn(e.staff.Email, "")
	adminValue, adminRevoke := create(admin, "admin's")
	staffValue, staffRevoke := create(staff, "staff's")

	res, body := staff.do(http.MethodPost, adminRevoke, url.Values{}, sameOrigin)
	if res.StatusCode != http.StatusForbidden || !strings.Contains(body, "admin role") {
		t.Fatalf("staff revoking the admin's token: %d, want the 403 page", res.StatusCode)
	}
	if status, _ := e.apiCall(adminValue, http.MethodGet, "/api/data/customers/", ""); status != http.StatusOK {
		t.Fatalf("the admin's token after a refused revocation: %d", status)
	}
	adminID := strings.Split(adminRevoke, "/")[4]
	if status, _ := e.apiCall(staffValue, http.MethodDelete, "/api/access-tokens/"+adminID+"/", ""); status != http.StatusForbidden {
		t.Errorf("staff's DELETE of the admin's token on the API: %d, want 403", status)
	}
	res, _ = staff.do(http.MethodPost, staffRevoke, url.Values{}, sameOrigin)
	if res.StatusCode != http.StatusSeeOther {
		t.Fatalf("staff revoking its own token: %d", res.StatusCode)
	}
	if status, _ := e.apiCall(staffValue, http.MethodGet, "/api/data/customers/", ""); status != http.StatusUnauthorized {
		t.Errorf("a revoked token: %d, want 401", status)
	}
	// The admin's through the API, with the admin's own token.
	if status, body := e.apiCall(adminValue, http.MethodDelete, "/api/access-tokens/"+adminID+"/", ""); status != http.StatusOK {
		t.Fatalf("DELETE /api/access-tokens/<id>/: %d %s", status, body)
	}
	if status, _ := e.apiCall(adminValue, http.MethodGet, "/api/data/customers/", ""); status != http.StatusUnauthorized {
		t.Errorf("the revoked admin token: %d, want 401", status)
	}
	res, _ = admin.do(http.MethodPost, adminRevoke, url.Values{}, sameOrigin)
	if res.StatusCode != http.StatusNotFound {
		t.Errorf("revoking again: %d, want 404", res.StatusCode)
	}
	_, body = admin.do(http.MethodGet, "/console/access", nil, nil)
	if strings.Contains(body, "admin&#39;s") || strings.Contains(body, "staff&#39;s") {
		t.Errorf("revoked tokens still listed")
	}
}

// TestRevokeOtherCompanyToken: an admin of one company who sends the
// revoke form with another company's token id gets a 404, and the token
// stays.
func TestRevokeOtherCompanyToken(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	globex := access.Principal{CompanyID: e.globex.ID, UserID: e.globexAdmin.ID, OwnerID: access.UserOwner(e.globexAdmin.ID),
		Roles: []access.Role{access.RoleAdmin}}
	tok, _, err := e.cmds.CreateAccessToken.Handle(ctx, commands.CreateAccessToken{Principal: globex, Name: "globex's"})
	if err != nil {
		t.Fatal(err)
	}
	c := e.client(acmeHost)
	c.logIn(e.admin.Email, "")
	res, body := c.do(http.MethodPost, "/console/access/tokens/"+tok.ID+"/revoke", url.Values{}, sameOrigin)
	if res.StatusCode != http.StatusNotFound || strings.Contains(body, "globex") {
		t.Fatalf("acme's admin revoking globex's token: %d, want 404", res.StatusCode)
	}
	list, err := readmodels.NewAccess(e.pool).AccessTokens(ctx, e.globex.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || list[0].ID != tok.ID {
		t.Fatalf("globex's tokens after acme's attempt: %+v", list)
	}
	if _, body := c.do(http.MethodGet, "/console/access", nil, nil); strings.Contains(body, tok.ID) {
		t.Errorf("acme's access page lists globex's token")
	}
}
