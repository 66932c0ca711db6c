package console_test

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/clientele/clientele/commands"
	"github.com/clientele/clientele/domain/importing"
)

// TestBrowserCustomerPage: a customer's page is titled with the
// person's name; its timeline is one list of the record's changes, its
// events and its sales by date, newest first, 50 a page with Older and
// Newer; a sale's total shows in major units with the company's currency
// (16700 is 167.00 EUR); who changed the record is named as people read
// it: the admin by email, an integration's token by the integration's
// and the token's names, never tokens/<id>.
func TestBrowserCustomerPage(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	e.mustImport(e.acme, importing.Customers, "external_id,first_name,last_name,email\nL-1,Liisa,Ääkkönen,liisa@example.com\n")
	id := e.waitCustomer(e.acme, "external_id", "L-1")
	in, err := e.cmds.CreateIntegration.Handle(ctx, commands.CreateIntegration{Principal: e.adminPrincipal(), Name: "Webshop"})
	if err != nil {
		t.Fatal(err)
	}
	_, value, err := e.cmds.CreateAccessToken.Handle(ctx, commands.CreateAccessToken{Principal: e.adminPrincipal(),
		Name: "shop sync", OwnerID: "integrations/" + in.ID})
	if err != nil {
		t.Fatal(err)
	}
	if status, body := e.apiCall(value, http.MethodPost, "/api/customers/upload/", `{"customers": [{"external_id": "L-1", "city": "Jyväskylä"}]}`); status != http.StatusOK {
		t.Fatalf("upload with the integration's token: %d %s", status, body)
	}
	// 60 events on the days of January, and two sales between them.
	var events strings.Builder
	events.WriteString("type,date,customer_id,path\n")
	for i := range 60 {
		at := time.Date(2026, 1, 1, 8, 0, 0, 0, time.UTC).Add(time.Duration(i) * 12 * time.Hour)
		fmt.Fprintf(&events, "BROWSE,%s,L-1,/page/%d\n", at.Format(time.RFC3339), i)
	}
	e.mustImport(e.acme, importing.Events, events.String())
	e.mustImport(e.acme, importing.Sales, "sale_external_id,sale_date,sale_customer_id,sale_total,product_id,quantity\n"+
		"S-1,2026-01-10T12:00:00Z,L-1,16700,P-1,1\nS-2,2026-01-30T12:00:00Z,L-1,123456,P-2,2\n")
	e.waitCount(e.acme, "activity_events", 60)
	e.waitCount(e.acme, "sales", 2)

	tctx := tab(t)
	browserLogIn(t, tctx, e, acmeHost, e.admin.Email, "")
	var heading, title, timeline string
	var times []string
	var entries int
	run(t, tctx, "open the customer",
		chromedp.Navigate(e.url(acmeHost, "/console/customers/"+id)),
		chromedp.WaitVisible(css("#timeline")),
		textInto(css("#customer-name"), &heading),
		evalInto(`document.title`, &title),
		textInto(css("#timeline"), &timeline),
		evalInto(`[...document.querySelectorAll("#timeline time")].map(t => t.getAttribute("datetime"))`, &times),
		evalInto(`document.querySelectorAll("#timeline > li").length`, &entries),
		shot("customer"),
	)
	if strings.TrimSpace(heading) != "Liisa Ääkkönen" || !strings.HasPrefix(title, "Liisa Ääkkönen") {
		t.Errorf("the page is titled %q (%q), want the customer's name", heading, title)
	}
	if entries != 50 || !sort.SliceIsSorted(times, func(i, j int) bool { return times[i] > times[j] }) {
		t.Errorf("the first page has %d entries, want 50 newest first: %v", entries, times)
	}
	// The record's changes, recorded now, lead; the events and sales of
	// January follow by their dates.
	for _, want := range []string{"Record changed", "CustomerUpserted", "= Liisa", e.admin.Email,
		"the integration Webshop, with the token “shop sync”", "= Jyväskylä",
		"Sale S-2", "1,234.56 EUR", "Sale S-1", "167.00 EUR", "Event BROWSE", "/page/59"} {
		if !strings.Contains(timeline, want) {
			t.Errorf("the timeline lacks %q", want)
		}
	}
	if i, j := strings.Index(timeline, "Sale S-2"), strings.Index(timeline, "/page/57"); i < 0 || j < 0 || i > j {
		t.Errorf("the sale of 30 January is not before the event of 29 January in the timeline")
	}
	if strings.Contains(timeline, "16700") {
		t.Errorf("a sale's total shows in minor units")
	}
	var older string
	run(t, tctx, "page to older entries",
		chromedp.Click(css("#older")),
		chromedp.WaitVisible(css("#newer")),
		textInto(css("#timeline"), &older),
	)
	for _, want := range []string{"/page/0", "/page/13"} {
		if !strings.Contains(older, want) {
			t.Errorf("the older entries lack %q:\n%s", want, older)
		}
	}
	if strings.Contains(timeline+older, "tokens/") || strings.Contains(timeline+older, "users/") {
		t.Errorf("an actor is named by its id:\n%s", older)
	}
}
