package console_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/clientele/clientele/commands/imports"
	"github.com/clientele/clientele/domain/importing"
	"github.com/clientele/clientele/internal/ingest"
)

// TestBrowserOutletFailedAttempt: the overview lists a webhook outlet
// whose receiver answers 500; its last attempt opens with the raw request
// and reply the delivery worker recorded.
func TestBrowserOutletFailedAttempt(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	// A run with a rejection, for the chart's red part.
	up, err := e.uploads.Handle(context.Background(), imports.StageUpload{Principal: e.adminPrincipal(), Entity: importing.Customers,
		Format: ingest.CSV, Body: strings.NewReader("external_id,email\nB-1,bea@example.com\nB-2,not an email\n")})
	if err != nil {
		t.Fatal(err)
	}
	e.waitRun(up.RunID)
	dt, _ := e.failingOutlet(3)
	ctx := tab(t)
	browserLogIn(t, ctx, e, acmeHost, e.admin.Email, "")
	var failing string
	run(t, ctx, "read the overview",
		chromedp.Navigate(e.url(acmeHost, "/console/")),
		chromedp.WaitVisible(css("#imports-chart svg")),
		textInto(css("#failing tbody"), &failing),
	)
	if !strings.Contains(failing, "ERP orders") || !strings.Contains(failing, "500") {
		t.Fatalf("the overview's failing outlets: %q", failing)
	}
	var request, reply, reason string
	run(t, ctx, "open the failed attempt",
		chromedp.Click(css("#failing a.attempt")),
		chromedp.WaitVisible(css("#attempt")),
		shot("attempt"),
		textInto(css("#attempt-request"), &request),
		textInto(css("#attempt-reply"), &reply),
		textInto(css("#attempt-reason"), &reason),
	)
	if !strings.HasPrefix(request, "POST /hook?key=s3cret") || !strings.Contains(request, "message 1") {
		t.Errorf("the attempt's request: %q", request)
	}
	if !strings.Contains(reply, "500") || !strings.Contains(reply, "the receiver is down") {
		t.Errorf("the attempt's reply: %q", reply)
	}
	var attempts string
	run(t, ctx, "open the datatarget",
		chromedp.Navigate(e.url(acmeHost, "/console/datatargets")),
		chromedp.WaitVisible(css("#datatargets")),
		shot("datatargets"),
		chromedp.Navigate(e.url(acmeHost, "/console/datatargets/"+dt)),
		chromedp.WaitVisible(css("#message-list")),
		shot("datatarget"),
		chromedp.Click(css("#outlets a.open")),
		chromedp.WaitVisible(css("#attempts")),
		textInto(css("#attempts tbody"), &attempts),
	)
	if !strings.Contains(attempts, "FAIL") {
		t.Errorf("the outlet's log: %q", attempts)
	}
}

// TestBrowserCreateTokenOnce creates a scoped token on the access page:
// its value is shown once, works on the API, and is gone on the next
// load.
func TestBrowserCreateTokenOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := tab(t)
	browserLogIn(t, ctx, e, acmeHost, e.admin.Email, "")
	var value string
	run(t, ctx, "create a token",
		chromedp.Navigate(e.url(acmeHost, "/console/access")),
		chromedp.WaitVisible(css("#token-form")),
		typeText(css("#token-name"), "nightly export"),
		typeText(css("#token-scopes"), "GET /api/data/customers/"),
		chromedp.Click(css("#token-submit")),
		chromedp.WaitVisible(css("#token-value")),
		shot("access"),
		textInto(css("#token-value"), &value),
	)
	value = strings.TrimSpace(value)
	if len(value) < 20 {
		t.Fatalf("token value %q", value)
	}
	if status, _ := e.apiCall(value, http.MethodGet, "/api/data/customers/", ""); status != http.StatusOK {
		t.Fatalf("the shown token on the API: %d", status)
	}
	var shown int
	var list, at string
	run(t, ctx, "reload the page that shows it",
		locationInto(&at),
		chromedp.Reload(),
		chromedp.WaitVisible(css("#token-list")),
		evalInto(`document.querySelectorAll("#token-value").length`, &shown),
		textInto(css("#token-list tbody"), &list),
	)
	if !strings.Contains(at, "/console/access?created=") || shown != 0 || strings.Count(list, "nightly export") != 1 {
		t.Fatalf("after a reload of %s: %d values shown, list %q: want one token and its value gone", at, shown, list)
	}
	run(t, ctx, "load the page again",
		chromedp.Navigate(e.url(acmeHost, "/console/access")),
		chromedp.WaitVisible(css("#token-list")),
		evalInto(`document.querySelectorAll("#token-value").length`, &shown),
		textInto(css("#token-list tbody"), &list),
	)
	if shown != 0 || strings.Contains(list, value) || !strings.Contains(list, "nightly export") {
		t.Fatalf("after a reload: %d values shown, list %q", shown, list)
	}
}

// TestBrowserStaffAdminAction: a staff user reads the campaigns, and the
// access page shows it no form of an admin's action (creating an
// integration, adding an SFTP key): only the form of its own tokens.
func TestBrowserStaffAdminAction(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := tab(t)
	token := e.apiToken()
	e.mustImport(e.acme, importing.Customers, "external_id\nA\nB\nC\n")
	if status, body := e.apiCall(token, http.MethodPost, "/api/campaigns/", `{"campaign_key": "spring", "kind": "email",
		"name": "Spring sale", "state": "active", "activated_at": "2025-01-01T00:00:00Z"}`); status != http.StatusOK {
		t.Fatalf("create campaign: %d %s", status, body)
	}
	e.mustImport(e.acme, importing.Events, "type,date,customer_id,campaign_key\n"+
		"MAIL_SENT,2025-01-01T10:00:00Z,A,spring\nMAIL_SENT,2025-01-01T10:00:00Z,B,spring\nMAIL_SENT,2025-01-01T10:00:00Z,C,spring\n"+
		"MAIL_OPEN,2025-01-02T10:00:00Z,A,spring\nMAIL_OPEN,2025-01-02T10:00:00Z,B,spring\nMAIL_CLICK,2025-01-02T11:00:00Z,A,spring\n")
	e.mustImport(e.acme, importing.Sales, "sale_external_id,sale_date,sale_customer_id,product_id,quantity,unit_price\n"+
		"S-1,2025-01-05,A,P1,2,500\nS-2,2025-01-06,B,P2,1,1250\n")
	c := e.client(acmeHost)
	c.logIn(e.staff.Email, "")
	c.waitPage("/console/campaigns/spring", "<th>sales</th><td>2</td>")
	browserLogIn(t, ctx, e, acmeHost, e.staff.Email, "")
	// A staff user reads the campaigns.
	run(t, ctx, "read the campaigns",
		chromedp.Navigate(e.url(acmeHost, "/console/campaigns")),
		chromedp.WaitVisible(css("#campaigns a.open")),
		shot("campaigns"),
		chromedp.Click(css("#campaigns a.open")),
		chromedp.WaitVisible(css("#campaign-details")),
		shot("campaign"),
	)
	// The access page shows a staff user only the forms it may send.
	var forms []string
	run(t, ctx, "open the access page as staff",
		chromedp.Navigate(e.url(acmeHost, "/console/access")),
		chromedp.WaitVisible(css("#token-form")),
		evalInto(`[...document.querySelectorAll("main form[id]")].map(f => f.id)`, &forms),
	)
	if strings.Join(forms, ",") != "token-form" {
		t.Errorf("a staff user is shown the forms %v, want only token-form", forms)
	}
}
