package console_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/clientele/clientele/commands"
	"github.com/clientele/clientele/domain/importing"
	"github.com/clientele/clientele/domain/segment"
)

// mustSegment creates a segment of acme as its admin would through
// POST /api/segments/.
func (e *env) mustSegment(body string) {
	e.t.Helper()
	in, err := segment.ParseInput([]byte(body))
	if err != nil {
		e.t.Fatal(err)
	}
	if _, err := e.cmds.CreateSegment.Handle(context.Background(), commands.CreateSegment{Principal: e.adminPrincipal(), Input: in}); err != nil {
		e.t.Fatal(err)
	}
}

// segmentFixture is 52 customers of acme in Helsinki and one in Turku,
// members of the segments hel and tku.
func segmentFixture(t *testing.T, e *env) (helsinki, turku string) {
	t.Helper()
	var csv strings.Builder
	csv.WriteString("external_id,first_name,email,city\nT-1,Tuula,tuula@example.com,Turku\n")
	for i := range 52 {
		fmt.Fprintf(&csv, "H-%02d,Heikki %02d,h%02d@example.com,Helsinki\n", i, i, i)
	}
	e.mustImport(e.acme, importing.Customers, csv.String())
	e.mustSegment(`{"segment_key": "hel", "name": "Lives in Helsinki", "rule": {"field": "city", "eq": "Helsinki"}}`)
	e.mustSegment(`{"segment_key": "tku", "name": "Lives in Turku", "rule": {"all": [{"field": "city", "eq": "Turku"}, {"field": "email", "exists": true}]}}`)
	e.waitCount(e.acme, "segment_members", 53)
	return e.waitCustomer(e.acme, "external_id", "H-00"), e.waitCustomer(e.acme, "external_id", "T-1")
}

// TestBrowserSegments: the Segments page (a menu entry) lists the
// segments with their key, state and size, and a chart of each one's
// members day by day that rises today, when they entered; a segment's
// page shows its rule and its members 50 a page with Next, each linked
// to its customer's page; a customer's page names the segments it is in,
// with when it entered each.
func TestBrowserSegments(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	helsinki, turku := segmentFixture(t, e)
	ctx := tab(t)
	browserLogIn(t, ctx, e, acmeHost, e.staff.Email, "")

	var rows []string
	var current string
	// The first and last points of each chart's line: y grows downwards.
	var lines [][]string
	run(t, ctx, "open the segments page from the menu",
		chromedp.Navigate(e.url(acmeHost, "/console/")),
		chromedp.Click(css(`nav.sections a[href="/console/segments"]`)),
		chromedp.WaitVisible(css("#segments")),
		evalInto(`[...document.querySelectorAll("#segments tbody tr.segment")].map(r => r.innerText.replace(/\s+/g, " ").trim())`, &rows),
		evalInto(`document.querySelector("nav.sections a.current").textContent`, &current),
		evalInto(`[...document.querySelectorAll("#segments tr.segment svg.spark polyline")].map(l => l.getAttribute("points").split(" "))`, &lines),
		shot("segments"),
	)
	if len(rows) != 2 || !strings.HasPrefix(rows[0], "Lives in Helsinki hel active 52") || !strings.HasPrefix(rows[1], "Lives in Turku tku active 1") {
		t.Errorf("the segments: %q", rows)
	}
	if current != "Segments" {
		t.Errorf("the menu's current entry: %q", current)
	}
	if len(lines) != 2 {
		t.Fatalf("%d charts, want 2", len(lines))
	}
	for i, l := range lines {
		y := func(p string) float64 { f, _ := strconv.ParseFloat(p[strings.IndexByte(p, ',')+1:], 64); return f }
		if len(l) != 30 || y(l[len(l)-2]) <= y(l[len(l)-1]) || y(l[0]) != y(l[len(l)-2]) {
			t.Errorf("chart %d: %d points, %v: want 30, flat at 0 until it rises today", i, len(l), l)
		}
	}

	var rule, size, firstID string
	var members int
	var next bool
	run(t, ctx, "open a segment",
		chromedp.Click(css(`#segments a[href="/console/segments/hel"]`)),
		chromedp.WaitVisible(css("#members")),
		textInto(css("#rule"), &rule),
		textInto(css("#size"), &size),
		evalInto(`document.querySelectorAll("#members tbody a.open").length`, &members),
		evalInto(`document.querySelector("#members tbody a.open").textContent`, &firstID),
		evalInto(`!!document.querySelector("#next")`, &next),
		shot("segment"),
	)
	if !strings.Contains(rule, `"city"`) || !strings.Contains(rule, `"Helsinki"`) || size != "52" || members != 50 || !next {
		t.Errorf("the segment's page: rule %q, size %q, %d members, next %v (want the rule, 52, 50, true)", rule, size, members, next)
	}
	run(t, ctx, "the next page of members",
		chromedp.Click(css("#next")),
		chromedp.WaitVisible(css("#members")),
		evalInto(`document.querySelectorAll("#members tbody a.open").length`, &members),
		evalInto(`!!document.querySelector("#next")`, &next),
	)
	if members != 2 || next {
		t.Errorf("the second page: %d members, next %v; want 2, false", members, next)
	}

	var heading string
	run(t, ctx, "a member's link opens the customer",
		chromedp.Navigate(e.url(acmeHost, "/console/segments/hel")),
		chromedp.WaitVisible(css("#members")),
		chromedp.Click(css(`#members a[href="/console/customers/`+firstID+`"]`)),
		chromedp.WaitVisible(css("#customer-name")),
		textInto(css("#customer-name"), &heading),
	)
	if !strings.HasPrefix(heading, "Heikki") {
		t.Errorf("the member's page is titled %q", heading)
	}
	for id, want := range map[string]string{helsinki: "Lives in Helsinki hel", turku: "Lives in Turku tku"} {
		var in []string
		run(t, ctx, "a customer's segments",
			chromedp.Navigate(e.url(acmeHost, "/console/customers/"+id)),
			chromedp.WaitVisible(css("#customer-segments")),
			evalInto(`[...document.querySelectorAll("#customer-segments li")].map(r => r.innerText.replace(/\s+/g, " ").trim())`, &in),
		)
		if len(in) != 1 || !strings.HasPrefix(in[0], want+" · since 20") || !strings.HasSuffix(in[0], "UTC") {
			t.Errorf("customer %s is in %q, want %q since its entry", id, in, want)
		}
	}
}

// TestSegmentPages: an unknown segment, and another company's, are 404;
// a rule too large to show whole is cut, with a link to download it as
// stored; a customer in no segment says so.
func TestSegmentPages(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.mustImport(e.acme, importing.Customers, "external_id,email\nN-1,nobody@example.com\n")
	id := e.waitCustomer(e.acme, "external_id", "N-1")
	values := make([]string, 1000)
	for i := range values {
		values[i] = fmt.Sprintf("someone.%04d@example.com", i)
	}
	list, _ := json.Marshal(values)
	e.mustSegment(`{"segment_key": "big", "name": "Listed", "rule": {"field": "email", "in": ` + string(list) + `}}`)

	c := e.client(acmeHost)
	c.logIn(e.staff.Email, "")
	res, body := c.do(http.MethodGet, "/console/segments/big", nil, nil)
	if res.StatusCode != http.StatusOK || !strings.Contains(body, "someone.0000@example.com") || strings.Contains(body, "someone.0999@example.com") ||
		!strings.Contains(body, "Too large to show here in full") || !strings.Contains(body, `href="/console/segments/big/rule"`) || len(body) > 64<<10 {
		t.Errorf("the segment's page with a %d-byte rule: %d, %d bytes; want it cut with a download link", len(list), res.StatusCode, len(body))
	}
	res, body = c.do(http.MethodGet, "/console/segments/big/rule", nil, nil)
	if res.StatusCode != http.StatusOK || !strings.Contains(body, "someone.0999@example.com") {
		t.Errorf("the rule's download: %d, %d bytes", res.StatusCode, len(body))
	}
	if res, _ := c.do(http.MethodGet, "/console/segments/none", nil, nil); res.StatusCode != http.StatusNotFound {
		t.Errorf("an unknown segment: %d, want 404", res.StatusCode)
	}
	if res, body := c.do(http.MethodGet, "/console/customers/"+id, nil, nil); !strings.Contains(body, "In no segment now.") {
		t.Errorf("a customer in no segment: %d\n%s", res.StatusCode, body)
	}
	g := e.client(globexHost)
	g.logIn(e.globexAdmin.Email, "")
	for _, path := range []string{"/console/segments/big", "/console/segments/big/rule"} {
		if res, _ := g.do(http.MethodGet, path, nil, nil); res.StatusCode != http.StatusNotFound {
			t.Errorf("another company's %s: %d, want 404", path, res.StatusCode)
		}
	}
	if _, body := g.do(http.MethodGet, "/console/segments", nil, nil); strings.Contains(body, "Listed") {
		t.Error("another company's segments page lists acme's segment")
	}
}
