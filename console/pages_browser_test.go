package console_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/pquerna/otp/totp"

	"github.com/clientele/clientele/domain/importing"
)

// TestBrowserLogInWithTOTP logs in with an email, a password and the
// current two-factor code, and out again: the page then says so. The
// pages carry the console's icon (an SVG it serves).
func TestBrowserLogInWithTOTP(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := tab(t)
	code, err := totp.GenerateCode(e.totp.TOTPSecret, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	// A wrong code is refused with the page's message.
	run(t, ctx, "log in with a wrong code",
		chromedp.Navigate(e.url(acmeHost, "/console/customers")),
		chromedp.WaitVisible(css("#login-form")),
		shot("login"),
		typeText(css("#email"), e.totp.Email),
		typeText(css("#password"), password),
		typeText(css("#totp"), wrongCode(code)),
		chromedp.Click(css("#login-submit")),
		chromedp.WaitVisible(css("#login-error")),
	)
	// The password field is empty again after a refusal; the email stays.
	run(t, ctx, "log in with the right code",
		typeText(css("#password"), password),
		typeText(css("#totp"), code),
		chromedp.Click(css("#login-submit")),
		chromedp.WaitVisible(css("#who")),
	)
	var who, at string
	run(t, ctx, "read who is logged in", textInto(css("#who"), &who), locationInto(&at))
	if !strings.Contains(who, e.totp.Email) || !strings.HasSuffix(at, "/console/customers") {
		t.Fatalf("after log-in: %q at %s, want %s on the page asked for first", who, at, e.totp.Email)
	}
	// The page has the console's icon, an SVG the console serves.
	var icon string
	run(t, ctx, "read the icon",
		into(chromedp.Evaluate[string](`fetch(document.querySelector('link[rel="icon"]').href).then(r => r.headers.get("Content-Type") + " " + r.status)`,
			chromedp.EvalAwaitPromise), &icon))
	if icon != "image/svg+xml 200" {
		t.Errorf("the page's icon: %q, want an SVG served by the console", icon)
	}
	var out string
	run(t, ctx, "log out", chromedp.Click(css("#logout")), chromedp.WaitVisible(css("#login-form")),
		textInto(css("#logged-out"), &out), shot("logged-out"))
	if out != "You are logged out." {
		t.Errorf("after log-out the page says %q", out)
	}
	run(t, ctx, "open a page after log-out",
		chromedp.Navigate(e.url(acmeHost, "/console/customers")), chromedp.WaitVisible(css("#login-form")))
}

// wrongCode is a six-digit code other than code.
func wrongCode(code string) string {
	if code == "000000" {
		return "111111"
	}
	return "000000"
}

// TestBrowserCustomerSearchTimelineForget searches a customer by a
// field, opens its page and timeline, forgets it after the confirmation,
// and sees the page become a forgotten customer's.
func TestBrowserCustomerSearchTimelineForget(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.mustImport(e.acme, importing.Customers, "external_id,email,first_name,tags\nC-1,ann@example.com,Ann,vip\nC-2,bob@example.com,Bob,\n")
	e.mustImport(e.acme, importing.Customers, "external_id,last_name\nC-1,Anderson\n")
	id := e.waitCustomer(e.acme, "last_name", "Anderson")
	e.mustImport(e.acme, importing.Events, "type,date,customer_id,path\nBROWSE,2026-01-02T10:00:00Z,C-1,/shoes/red\n")
	e.mustImport(e.acme, importing.Sales, "sale_external_id,sale_date,sale_customer_id,sale_total,product_id,quantity\nS-77,2026-01-03T12:00:00Z,C-1,4990,P-1,1\n")
	e.waitRow(e.acme, "activity_events")
	e.waitRow(e.acme, "sales")
	ctx := tab(t)
	browserLogIn(t, ctx, e, acmeHost, e.admin.Email, "")

	var rows string
	run(t, ctx, "search by email",
		chromedp.Navigate(e.url(acmeHost, "/console/customers")),
		chromedp.WaitVisible(css("#search")),
		typeText(css(`#q`), "ann@"),
	)
	// The unfiltered list shows the same rows until the search's page
	// replaces it: wait for that page to load.
	if _, err := chromedp.RunResponse(ctx, chromedp.Click(css("#search-submit"))); err != nil {
		t.Fatalf("search by email: %v", err)
	}
	run(t, ctx, "read the search's results",
		chromedp.WaitVisible(css(`#customers a.open`)),
		textInto(css("#customers tbody"), &rows),
	)
	if !strings.Contains(rows, "ann@example.com") || strings.Contains(rows, "bob@example.com") {
		t.Fatalf("search ann@ lists:\n%s", rows)
	}

	var timeline, fields, title string
	run(t, ctx, "open the customer",
		chromedp.Click(css(`#customers a.open`)),
		chromedp.WaitVisible(css("#timeline")),
		textInto(css("#customer-name"), &title),
		textInto(css("#timeline"), &timeline),
		textInto(css("#fields"), &fields),
	)
	if strings.TrimSpace(title) != "Ann Anderson" {
		t.Errorf("the customer's page is titled %q, want its name", title)
	}
	for _, want := range []string{"CustomerUpserted", "first_name", "= Ann", "last_name", "= Anderson", e.admin.Email,
		"Event BROWSE", "/shoes/red", "Sale S-77", "49.90 EUR"} {
		if !strings.Contains(timeline, want) {
			t.Errorf("timeline lacks %q:\n%s", want, timeline)
		}
	}
	if strings.Count(timeline, "CustomerUpserted") < 2 {
		t.Errorf("timeline shows fewer than the 2 upserts:\n%s", timeline)
	}
	if !strings.Contains(fields, "Anderson") || !strings.Contains(fields, id) {
		t.Errorf("fields lack the customer's:\n%s", fields)
	}

	var warning string
	run(t, ctx, "ask to forget",
		chromedp.Click(css("#forget")),
		chromedp.WaitVisible(css("#warning")),
		shot("forget"),
		textInto(css("#warning"), &warning),
	)
	if !strings.Contains(warning, "cannot be undone") || !strings.Contains(warning, "unreadable") {
		t.Fatalf("the confirmation does not name what cannot be undone: %q", warning)
	}
	var page string
	run(t, ctx, "forget",
		chromedp.Click(css("#confirm")),
		// The page watches the run and reloads once it is done.
		chromedp.WaitVisible(css("#forgotten")),
		chromedp.WaitVisible(css("#run.state-completed")),
		shot("forgotten"),
		textInto(css("main"), &page),
		evalInto(`document.title`, &title),
	)
	if !strings.HasPrefix(title, "Forgotten customer") {
		t.Errorf("a forgotten customer's page is titled %q", title)
	}
	if strings.Contains(page, "ann@example.com") || strings.Contains(page, "Anderson") || strings.Contains(page, "Ann") {
		t.Fatalf("a forgotten customer's page shows its data:\n%s", page)
	}
}

// TestBrowserUploadCSV drops a CSV on the upload form, uploads it and
// watches its run complete, with its rejections listed.
func TestBrowserUploadCSV(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	csv := filepath.Join(t.TempDir(), "customers.csv")
	if err := os.WriteFile(csv, []byte("external_id,email,country\nU-1,una@example.com,FI\nU-2,not an email,SE\nU-3,uma@example.com,XX\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := tab(t)
	browserLogIn(t, ctx, e, acmeHost, e.admin.Email, "")
	var counts, rejections, at, dropped string
	run(t, ctx, "upload",
		chromedp.Navigate(e.url(acmeHost, "/console/imports")),
		chromedp.WaitVisible(css("#upload-form")),
		chromedp.SetValue(css("#entity"), "customers"),
		// Dropped on the form, as from a file manager.
		dropFile(css("#drop"), csv),
		chromedp.WaitVisible(css(`#drop span`)),
		textInto(css("#drop span"), &dropped),
		chromedp.Click(css("#upload-submit")),
		chromedp.WaitVisible(css("#run.state-completed")),
		shot("import"),
		locationInto(&at),
		textInto(css("#run"), &counts),
		textInto(css("#run .rejections"), &rejections),
	)
	if dropped != "customers.csv" {
		t.Errorf("after the drop the form shows %q, want the file's name", dropped)
	}
	if !strings.Contains(at, "/console/imports/") {
		t.Fatalf("after the upload the page is %s, want the run's", at)
	}
	if !strings.Contains(counts, "received 3") || !strings.Contains(counts, "accepted 1") || !strings.Contains(counts, "rejected 2") {
		t.Fatalf("run shows %q, want 3 received, 1 accepted, 2 rejected", counts)
	}
	if !strings.Contains(rejections, "email") || !strings.Contains(rejections, "country") {
		t.Fatalf("rejections %q name neither email nor country", rejections)
	}
	var runs string
	run(t, ctx, "list runs",
		chromedp.Navigate(e.url(acmeHost, "/console/imports")),
		chromedp.WaitVisible(css("#runs")),
		shot("imports"),
		textInto(css("#runs"), &runs),
	)
	if !strings.Contains(runs, "console") || !strings.Contains(runs, "completed") {
		t.Fatalf("runs list %q lacks the console's completed run", runs)
	}
}

// TestBrowserStaffForbidden: a staff user sees no delete or forget
// button, and a 403 page where only admins may act.
func TestBrowserStaffForbidden(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.mustImport(e.acme, importing.Customers, "external_id,email\nS-1,sue@example.com\n")
	id := e.waitCustomer(e.acme, "external_id", "S-1")
	ctx := tab(t)
	browserLogIn(t, ctx, e, acmeHost, e.staff.Email, "")
	var buttons int
	run(t, ctx, "open the customer",
		chromedp.Navigate(e.url(acmeHost, "/console/customers/"+id)),
		chromedp.WaitVisible(css("#timeline")),
		evalInto(`document.querySelectorAll("#forget, #delete").length`, &buttons),
	)
	if buttons != 0 {
		t.Fatalf("a staff user is offered %d delete or forget buttons", buttons)
	}
	var title, msg string
	run(t, ctx, "open the forget page",
		chromedp.Navigate(e.url(acmeHost, "/console/customers/"+id+"/forget")),
		chromedp.WaitVisible(css("#error-title")),
		shot("forbidden"),
		textInto(css("#error-title"), &title),
		textInto(css("#error-message"), &msg),
	)
	if !strings.Contains(title, "403") || !strings.Contains(msg, "admin") {
		t.Fatalf("staff on an admin action sees %q / %q, want the 403 page", title, msg)
	}
}
