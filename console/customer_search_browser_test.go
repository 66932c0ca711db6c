package console_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/clientele/clientele/domain/importing"
)

// TestBrowserCustomerSearch: the search finds customers by the beginning
// of a name, an email or an id in any case ("liisa" finds Liisa
// Ääkkönen, "ÄÄK" too), says how many it found, sorts them, and pages
// with Next and Previous.
func TestBrowserCustomerSearch(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var csv strings.Builder
	csv.WriteString("external_id,email,first_name,last_name\nL-1,liisa@example.com,Liisa,Ääkkönen\nL-2,bob@example.com,Bob,Liisanen\n")
	for i := range 60 {
		fmt.Fprintf(&csv, "M-%02d,member%02d@example.com,Member,Number%02d\n", i, i, i)
	}
	e.mustImport(e.acme, importing.Customers, csv.String())
	e.waitCount(e.acme, "customers", 62)
	ctx := tab(t)
	browserLogIn(t, ctx, e, acmeHost, e.staff.Email, "")

	search := func(text string) (rows, found string) {
		t.Helper()
		run(t, ctx, "search "+text,
			chromedp.Navigate(e.url(acmeHost, "/console/customers")),
			chromedp.WaitVisible(css("#q")),
			typeText(css("#q"), text),
		)
		if _, err := chromedp.RunResponse(ctx, chromedp.Click(css("#search-submit"))); err != nil {
			t.Fatalf("search %s: %v", text, err)
		}
		run(t, ctx, "read the matches of "+text,
			chromedp.WaitVisible(css("#found")),
			textInto(css("#customers tbody"), &rows),
			textInto(css("#found"), &found),
		)
		return rows, found
	}
	rows, found := search("liisa")
	if !strings.Contains(rows, "liisa@example.com") || !strings.Contains(rows, "bob@example.com") || strings.Contains(rows, "member") ||
		!strings.HasPrefix(found, "2 customers") {
		t.Errorf("liisa finds %q:\n%s", found, rows)
	}
	if rows, found = search("ÄÄK"); !strings.Contains(rows, "Ääkkönen") || strings.Contains(rows, "bob@") || !strings.HasPrefix(found, "1 customer") {
		t.Errorf("ÄÄK finds %q:\n%s", found, rows)
	}
	if rows, _ = search("BOB@"); !strings.Contains(rows, "bob@example.com") || strings.Contains(rows, "liisa@") {
		t.Errorf("BOB@ finds:\n%s", rows)
	}
	if rows, _ = search("l-2"); !strings.Contains(rows, "bob@example.com") || strings.Contains(rows, "liisa@") {
		t.Errorf("l-2 finds:\n%s", rows)
	}

	// Every member, by name: 60 over two pages.
	var first, second, back string
	run(t, ctx, "sort the members by name",
		chromedp.Navigate(e.url(acmeHost, "/console/customers?q=member")),
		chromedp.WaitVisible(css("#sort")),
		chromedp.SetValue(css("#sort"), "name"),
	)
	if _, err := chromedp.RunResponse(ctx, chromedp.Click(css("#search-submit"))); err != nil {
		t.Fatal(err)
	}
	run(t, ctx, "page through the members",
		chromedp.WaitVisible(css("#next")),
		shot("customers"),
		textInto(css("#found"), &found),
		textInto(css("#customers tbody tr:first-child"), &first),
		chromedp.Click(css("#next")),
		chromedp.WaitVisible(css("#prev")),
		textInto(css("#customers tbody tr:first-child"), &second),
		chromedp.Click(css("#prev")),
		chromedp.WaitNotPresent(css("#prev")),
		textInto(css("#customers tbody tr:first-child"), &back),
	)
	if !strings.HasPrefix(found, "60 customers") || !strings.Contains(first, "Number00") || !strings.Contains(second, "Number50") || back != first {
		t.Errorf("members by name: %q; first page starts %q, second %q, back %q", found, first, second, back)
	}
}
