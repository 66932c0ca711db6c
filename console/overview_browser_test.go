package console_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/clientele/clientele/domain/importing"
)

// TestBrowserOverview: the overview leads with the headline figures
// (customers, new this week, events and revenue of the last 30 days),
// each with a trend chart drawn by the server; the import chart's day
// labels are legible (at least 10 px, none overlapping) at 1280 and at
// 390 px; the projections' lag is on the operations page, not here.
func TestBrowserOverview(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.mustImport(e.acme, importing.Customers, "external_id,email\nO-1,olga@example.com\nO-2,oscar@example.com\nO-3,otto@example.com\n")
	now := time.Now().UTC()
	var events strings.Builder
	events.WriteString("type,date,customer_id,path\n")
	for i := range 12 {
		fmt.Fprintf(&events, "BROWSE,%s,O-%d,/p\n", now.AddDate(0, 0, -i).Add(-time.Hour).Format(time.RFC3339), i%3+1)
	}
	// An event older than the 30 days is not counted.
	fmt.Fprintf(&events, "BROWSE,%s,O-1,/p\n", now.AddDate(0, 0, -40).Format(time.RFC3339))
	e.mustImport(e.acme, importing.Events, events.String())
	e.mustImport(e.acme, importing.Sales, "sale_external_id,sale_date,sale_customer_id,sale_total,product_id,quantity\n"+
		"S-1,"+now.AddDate(0, 0, -2).Format(time.RFC3339)+",O-1,16700,P-1,1\nS-2,"+now.AddDate(0, 0, -60).Format(time.RFC3339)+",O-2,5000,P-1,1\n")
	e.waitCount(e.acme, "activity_events", 13)
	e.waitCount(e.acme, "sales", 2)
	e.failingOutlet(2)
	ctx := tab(t)
	browserLogIn(t, ctx, e, acmeHost, e.staff.Email, "")
	figure := func(id string) string {
		var v string
		run(t, ctx, "read "+id, textInto(css("#"+id+" .value"), &v))
		return v
	}
	var sparks, lagTables int
	run(t, ctx, "open the overview",
		chromedp.Navigate(e.url(acmeHost, "/console/")),
		chromedp.WaitVisible(css("#headlines")),
		evalInto(`document.querySelectorAll("#headlines .headline svg.spark polyline").length`, &sparks),
		evalInto(`document.querySelectorAll("#lag").length`, &lagTables),
		shot("overview"),
	)
	for id, want := range map[string]string{"figure-customers": "3", "figure-new": "3", "figure-events": "12", "figure-revenue": "167.00 EUR"} {
		if got := figure(id); got != want {
			t.Errorf("%s reads %q, want %q", id, got, want)
		}
	}
	if sparks != 4 || lagTables != 0 {
		t.Errorf("%d trend charts (want 4), %d lag tables on the overview (want 0)", sparks, lagTables)
	}
	// The import chart's labels: their rendered size and overlaps.
	const labels = `(() => {
		const r = [...document.querySelectorAll("#imports-chart .chart-label")].map(l => l.getBoundingClientRect());
		let overlaps = 0;
		for (let i = 1; i < r.length; i++) if (r[i].left < r[i-1].right) overlaps++;
		return [r.length, Math.min(...r.map(b => b.height)), overlaps];
	})()`
	for _, width := range []int64{1280, 390} {
		var got []float64
		runAt(t, ctx, fmt.Sprintf("read the chart's labels at %d px", width), width,
			chromedp.Navigate(e.url(acmeHost, "/console/")),
			chromedp.WaitVisible(css("#imports-chart")),
			evalInto(labels, &got),
		)
		if len(got) != 3 || got[0] != 14 || got[1] < 10 || got[2] != 0 {
			t.Errorf("at %d px the chart's day labels: %v (want 14 labels, at least 10 px high, none overlapping)", width, got)
		}
	}
	var lag string
	runAt(t, ctx, "open the operations page", 1280,
		chromedp.Navigate(e.url(acmeHost, "/console/operations")),
		chromedp.WaitVisible(css("#lag")),
		shot("operations"),
		textInto(css("#lag"), &lag),
	)
	if !strings.Contains(lag, "customers") {
		t.Errorf("the operations page: %q", lag)
	}
}
