package console_test

import (
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/clientele/clientele/domain/importing"
)

// TestCampaignSalesOverTime: a campaign's page charts its conversions day
// by day over its 30-day window, as the statistics define them (a sale
// in the window by an audience member who opened or clicked before it),
// and over a window chosen by dates. The figures are worked by hand.
func TestCampaignSalesOverTime(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	token := e.apiToken()
	e.mustImport(e.acme, importing.Customers, "external_id,email\nA,a@example.com\nB,b@example.com\nC,c@example.com\nD,d@example.com\n")
	// The window: 2025-03-01 00:00 to 2025-03-31 00:00 UTC, both included
	// (the company's time zone is UTC): 31 days.
	if status, body := e.apiCall(token, http.MethodPost, "/api/campaigns/", `{"campaign_key": "summer", "kind": "email",
		"name": "Summer", "state": "active", "activated_at": "2025-03-01T00:00:00Z"}`); status != http.StatusOK {
		t.Fatalf("create campaign: %d %s", status, body)
	}
	// A, B and C were sent it; A opened on the 2nd at 09:00, B clicked on
	// the 3rd; C never reacted; D is not in the audience.
	e.mustImport(e.acme, importing.Events, "type,date,customer_id,campaign_key\n"+
		"MAIL_SENT,2025-03-01T10:00:00Z,A,summer\nMAIL_SENT,2025-03-01T10:00:00Z,B,summer\nMAIL_SENT,2025-03-01T10:00:00Z,C,summer\n"+
		"MAIL_OPEN,2025-03-02T09:00:00Z,A,summer\nMAIL_CLICK,2025-03-03T12:00:00Z,B,summer\n")
	e.mustImport(e.acme, importing.Sales, "sale_external_id,sale_date,sale_customer_id,product_id,quantity,unit_price\n"+
		"S-1,2025-03-02T08:00:00Z,A,P1,1,1000\n"+ // before A's open: no conversion
		"S-2,2025-03-02T15:00:00Z,A,P1,2,500\n"+ // the 2nd: 10.00
		"S-3,2025-03-05T10:00:00Z,A,P2,1,300\n"+ // the 5th: 3.00
		"S-4,2025-03-05T18:00:00Z,B,P2,3,200\n"+ // the 5th: 6.00
		"S-5,2025-03-06T10:00:00Z,C,P1,1,999\n"+ // C never reacted
		"S-6,2025-03-10T10:00:00Z,D,P1,1,777\n"+ // D is not in the audience
		"S-7,2025-03-30T23:00:00Z,B,P1,1,150\n"+ // the 30th: 1.50
		"S-8,2025-03-31T01:00:00Z,B,P1,1,400\n") // after the window's end
	c := e.client(acmeHost)
	c.logIn(e.staff.Email, "")
	body := c.waitPage("/console/campaigns/summer", "<th>sales</th><td>4</td>")
	if !strings.Contains(body, "<th>revenue</th><td>20.50 EUR</td>") {
		t.Errorf("the campaign's revenue is not 20.50 EUR (10.00 + 3.00 + 6.00 + 1.50)")
	}
	// By day: the 2nd one sale of 10.00, the 5th two of 9.00, the 30th
	// one of 1.50; the 31 days of the window each have their bar, the
	// month named on the first.
	checkDays(t, body, "the campaign's window", 31, "Mar 1",
		map[string]string{"2": "10.00", "5": "9.00", "30": "1.50"},
		map[string]string{"2": "1", "5": "2", "30": "1"})
	if !strings.Contains(body, `id="categories"`) || !strings.Contains(body, "Sales from 2025-03-01 to 2025-03-31") {
		t.Errorf("the page lost its chart by category, or does not name its window")
	}

	// A window chosen by dates, both days included: the 5th and the 6th.
	_, body = c.do(http.MethodGet, "/console/campaigns/summer?sales_start=2025-03-05&sales_end=2025-03-06", nil, nil)
	checkDays(t, body, "the 5th and 6th", 2, "Mar 5", map[string]string{"Mar 5": "9.00"}, map[string]string{"Mar 5": "2"})
	// One past the campaign's window: S-8 converts there.
	_, body = c.do(http.MethodGet, "/console/campaigns/summer?sales_start=2025-03-30&sales_end=2025-04-01", nil, nil)
	checkDays(t, body, "the 30th to April 1st", 3, "Mar 30",
		map[string]string{"Mar 30": "1.50", "31": "4.00"}, map[string]string{"Mar 30": "1", "31": "1"})
}

// checkDays checks the two charts of a campaign's sales over time: bars
// of the days, labelled from first on; the days of revenue and sales
// (by label) have those figures, and no other day has any.
func checkDays(t *testing.T, body, window string, bars int, first string, revenue, sales map[string]string) {
	t.Helper()
	for _, chart := range []struct {
		id, series string
		want       map[string]string
	}{
		{"sales-revenue-days", "revenue", revenue},
		{"sales-count-days", "sales", sales},
	} {
		m := regexp.MustCompile(`(?s)<figure class="chart" id="` + chart.id + `">.*?</figure>`).FindString(body)
		if m == "" {
			t.Errorf("%s: no chart %s", window, chart.id)
			continue
		}
		labels := regexp.MustCompile(`<text class="chart-label"[^>]*>([^<]*)</text>`).FindAllStringSubmatch(m, -1)
		if len(labels) != bars || labels[0][1] != first {
			t.Errorf("%s: %s has %d bars (first %q), want %d from %q", window, chart.id, len(labels), labels, bars, first)
		}
		titles := regexp.MustCompile(`<title>([^<]*)</title>`).FindAllStringSubmatch(m, -1)
		got := map[string]string{}
		for _, tt := range titles {
			label, rest, _ := strings.Cut(tt[1], ": ")
			got[label] = strings.TrimSuffix(rest, " "+chart.series)
		}
		if len(got) != len(chart.want) {
			t.Errorf("%s: %s has figures %v, want %v", window, chart.id, got, chart.want)
			continue
		}
		for label, v := range chart.want {
			if got[label] != v {
				t.Errorf("%s: %s on %s is %q, want %q", window, chart.id, label, got[label], v)
			}
		}
	}
}
