package console_test

import (
	"context"
	"net/url"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/clientele/clientele/commands"
	"github.com/clientele/clientele/domain/access"
	"github.com/clientele/clientele/domain/importing"
)

// TestBrowserPagesFit: at 1280 px every table of every page fits the
// card (or page) it is in, long values (an email, an outlet's address, a
// token's scopes) wrapping rather than pushing it wider; at 390 px (a
// phone) the header's brand, sections and log-out are all on the screen
// and the header makes the page no wider.
func TestBrowserPagesFit(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	long := strings.Repeat("verylongname", 5)
	run := e.mustImport(e.acme, importing.Customers, "external_id,email,first_name,last_name,tags\n"+
		"C-1,"+long+"@example.com,Liisa,Ääkkönen,"+strings.Repeat("tag", 30)+"\nC-2,bob@example.com,Bob,Builder,\n")
	id := e.waitCustomer(e.acme, "first_name", "Liisa")
	dt, outlet := e.failingOutlet(3)
	if _, _, err := e.cmds.CreateAccessToken.Handle(context.Background(), commands.CreateAccessToken{Principal: e.adminPrincipal(),
		Name: "export " + long, Scopes: []access.Scope{{Method: "GET", Path: "/api/data/customers/"}, {Method: "GET", Path: "/api/data/events/"},
			{Method: "GET", Path: "/api/data/sales/"}, {Method: "GET", Path: "/api/imports/"}}}); err != nil {
		t.Fatal(err)
	}
	e.mustSegment(`{"segment_key": "liisa", "name": "Named ` + long + `", "rule": {"field": "first_name", "eq": "Liisa"}}`)
	e.waitCount(e.acme, "segment_members", 1)
	pages := []string{"/console/", "/console/customers", "/console/customers/" + url.PathEscape(id), "/console/imports",
		"/console/imports/" + run, "/console/datatargets", "/console/datatargets/" + dt,
		"/console/datatargets/" + dt + "/outlets/" + outlet + "/log/1", "/console/campaigns", "/console/access",
		"/console/segments", "/console/segments/liisa", "/console/new-segment"}
	ctx := tab(t)
	browserLogIn(t, ctx, e, acmeHost, e.admin.Email, "")
	// The tables wider than the element that holds them, by id or class.
	const overflowing = `[...document.querySelectorAll("main table")].filter(t => {
		const c = t.parentElement.getBoundingClientRect(), r = t.getBoundingClientRect();
		return r.right > c.right + 1 || r.left < c.left - 1 || t.scrollWidth > t.clientWidth + 1
	}).map(t => t.id || t.className || t.parentElement.id)`
	// The header's parts off the screen, and how wide the header makes
	// the page.
	const headerOff = `[...document.querySelectorAll("header.top a, header.top button, header.top .who")].filter(el => {
		const r = el.getBoundingClientRect(); return r.width > 0 && (r.left < 0 || r.right > innerWidth + 1)
	}).map(el => el.textContent.trim())`
	for _, p := range pages {
		var wide []string
		var pageWidth float64
		runAt(t, ctx, "open "+p+" at 1280 px", 1280,
			chromedp.Navigate(e.url(acmeHost, p)),
			chromedp.WaitVisible(css("main")),
			evalInto(overflowing, &wide),
			evalInto(`document.documentElement.scrollWidth`, &pageWidth),
		)
		if len(wide) > 0 || pageWidth > 1280 {
			t.Errorf("%s at 1280 px: tables wider than their card %v, page %v px wide", p, wide, pageWidth)
		}
		var off []string
		var headerWidth float64
		runAt(t, ctx, "open "+p+" at 390 px", 390,
			chromedp.Navigate(e.url(acmeHost, p)),
			chromedp.WaitVisible(css("main")),
			evalInto(headerOff, &off),
			evalInto(`document.querySelector("header.top").scrollWidth`, &headerWidth),
		)
		if len(off) > 0 || headerWidth > 390 {
			t.Errorf("%s at 390 px: header parts off the screen %v, header %v px wide", p, off, headerWidth)
		}
	}
}

// runAt runs steps with the tab's viewport width px wide.
func runAt(t *testing.T, ctx context.Context, what string, width int64, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	run(t, ctx, what, append([]chromedp.Action[chromedp.Void]{chromedp.EmulateViewport(width, 900)}, steps...)...)
}
