package systemtest_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/clientele/clientele/commands"
	"github.com/clientele/clientele/domain/access"
	"github.com/clientele/clientele/domain/activity"
	"github.com/clientele/clientele/domain/company"
	"github.com/clientele/clientele/domain/product"
	"github.com/clientele/clientele/domain/sale"
	"github.com/clientele/clientele/eventstore"
	"github.com/clientele/clientele/projections"
	"github.com/clientele/clientele/projections/campaignstats"
	retrievalproj "github.com/clientele/clientele/projections/retrieval"
)

// statsPage is an answer of GET /api/campaign/actions/.
type statsPage struct {
	Order     string          `json:"order"`
	Limit     int             `json:"limit"`
	Next      *string         `json:"next"`
	Campaigns []statsCampaign `json:"campaigns"`
}

// statsCampaign is a campaign statistics object.
type statsCampaign struct {
	campaignJSON
	Stats *statsJSON `json:"stats"`
}

type statsJSON struct {
	DateRange           *map[string]string `json:"date_range"`
	AudienceSize        int                `json:"audience_size"`
	AudienceWithEvents  int                `json:"audience_with_events"`
	AudienceWithSales   int                `json:"audience_with_sales"`
	SalesForConversion  int                `json:"sales_for_conversion"`
	AudienceUnreachable int                `json:"audience_unreachable"`
	AudienceNoReaction  int                `json:"audience_no_reaction"`
	Events              []eventCount       `json:"events"`
	Sales               salesJSON          `json:"sales"`
	CacheModifiedAt     *string            `json:"cache_modified_at"`
}

type eventCount struct {
	Name  string `json:"name"`
	Count int    `json:"count"`
}

type salesJSON struct {
	DateRange              *map[string]string `json:"date_range"`
	TotalSales             int                `json:"total_sales"`
	TotalRevenue           int64              `json:"total_revenue"`
	AverageProductsCount   float64            `json:"average_products_count"`
	TotalProductsCount     float64            `json:"total_products_count"`
	CampaignProductCount   float64            `json:"campaign_product_count"`
	CampaignProductRevenue int64              `json:"campaign_product_revenue"`
	OtherProductCount      float64            `json:"other_product_count"`
	OtherProductRevenue    int64              `json:"other_product_revenue"`
	ProductCategories      []categoryJSON     `json:"product_categories"`
}

type categoryJSON struct {
	Title    string  `json:"title"`
	Units    float64 `json:"units"`
	Revenue  int64   `json:"revenue"`
	Discount int64   `json:"discount"`
}

// events is an events list of the seven counts in order.
func events(sent, delivered, opens, clicks, unsubscribes, spam, bounces int) []eventCount {
	return []eventCount{{"sent", sent}, {"delivered", delivered}, {"opens", opens}, {"clicks", clicks},
		{"unsubscribes", unsubscribes}, {"spam_reports", spam}, {"bounces", bounces}}
}

// campaignStats reads /api/campaign/actions/ with options.
func (e *env) campaignStats(token string, opts ...option) statsPage {
	e.t.Helper()
	res := e.do(http.MethodGet, "/api/campaign/actions/", append([]option{bearer(token)}, opts...)...)
	res.wantStatus(e.t, http.StatusOK)
	var p statsPage
	res.decode(e.t, &p)
	return p
}

// statsOf returns the stats of each campaign of a page by key, with
// cache_modified_at checked present and then left out (it is the time of
// a commit).
func statsOf(t *testing.T, p statsPage) map[string]*statsJSON {
	t.Helper()
	out := map[string]*statsJSON{}
	for _, c := range p.Campaigns {
		if c.Stats != nil {
			if c.Stats.CacheModifiedAt == nil {
				t.Errorf("%s: cache_modified_at null", c.CampaignKey)
			}
			s := *c.Stats
			s.CacheModifiedAt = nil
			out[c.CampaignKey] = &s
		} else {
			out[c.CampaignKey] = nil
		}
	}
	return out
}

// statsWorld appends the history of one company's campaigns straight to
// the log, in parts a test may append in any order.
type statsWorld struct {
	e       *env
	co      string
	token   string
	host    string
	eventID int64
}

func (w *statsWorld) activity(customer, typ, key, date string) eventstore.Event {
	w.eventID++
	return activityEvent(activity.TypeRecorded, activity.Recorded{ID: w.eventID, CustomerID: customer, Type: typ, Date: date,
		Fields: map[string]any{"campaign_key": key}})
}

func (w *statsWorld) appendActivity(evs ...eventstore.Event) {
	w.e.t.Helper()
	w.e.appendTo(w.co, activity.Stream(w.co), evs...)
}

func (w *statsWorld) sale(u sale.Upserted) {
	w.e.t.Helper()
	w.e.appendTo(w.co, sale.Stream(w.co, u.SaleID), activityEvent(sale.TypeUpserted, u))
}

func (w *statsWorld) product(id, externalID string, category any) {
	w.e.t.Helper()
	set := map[string]any{}
	if category != nil {
		set["category"] = category
	}
	w.e.appendTo(w.co, product.Stream(w.co, id), activityEvent(product.TypeUpserted,
		product.Upserted{ProductID: id, ExternalID: externalID, Created: true, Changes: product.Changes{Set: set}}))
}

func (w *statsWorld) campaign(body map[string]any) {
	w.e.t.Helper()
	w.e.createCampaign(w.token, body, host(w.host))
}

func row(product, externalID string, quantity any, total, discount int64, tags ...string) sale.Row {
	f := map[string]any{"product_id": externalID, "quantity": quantity, "total": total}
	if discount != 0 {
		f["discount"] = discount
	}
	if len(tags) > 0 {
		f["tags"] = tags
	}
	return sale.Row{Key: "product:id:" + externalID + "#0", ProductID: product, Fields: f}
}

// The parts of the figures scenario (docs/campaigns.md, Statistics, has
// it worked by hand).
func (w *statsWorld) campaigns() {
	w.campaign(map[string]any{"campaign_key": "spring", "kind": "email", "name": "Spring", "state": "active",
		"activated_at": "2024-03-01T00:00:00Z", "product_ids": []string{"P-1"}})
	w.campaign(map[string]any{"campaign_key": "flow", "kind": "automated-email", "name": "Flow", "state": "active",
		"activated_at": "2024-03-10T00:00:00Z"})
	w.campaign(map[string]any{"campaign_key": "later", "kind": "email", "name": "Later"})
	w.campaign(map[string]any{"campaign_key": "outside", "kind": "EXT", "name": "Outside", "state": "active",
		"activated_at": "2024-03-01T00:00:00Z"})
}

func (w *statsWorld) activities() {
	w.appendActivity(
		w.activity("c1", "MAIL_SENT", "spring", "2024-03-01T09:00:00Z"),
		w.activity("c1", "MAIL_DELIVERED", "spring", "2024-03-01T09:01:00Z"),
		w.activity("c1", "MAIL_OPEN", "spring", "2024-03-02T10:00:00Z"),
		w.activity("c1", "MAIL_CLICK", "spring", "2024-03-02T10:01:00Z"),
		w.activity("c1", "MAIL_CLICK", "spring", "2024-03-03T08:00:00Z"),
		w.activity("c2", "MAIL_SENT", "spring", "2024-03-01T09:00:00Z"),
		w.activity("c2", "MAIL_DELIVERED", "spring", "2024-03-01T09:01:00Z"),
		w.activity("c2", "MAIL_OPEN", "spring", "2024-03-05T12:00:00Z"),
		w.activity("c3", "MAIL_SENT", "spring", "2024-03-01T09:00:00Z"),
		w.activity("c3", "MAIL_BOUNCE", "spring", "2024-03-01T09:02:00Z"),
		w.activity("c4", "MAIL_SENT", "spring", "2024-03-01T09:00:00Z"),
		w.activity("c4", "MAIL_DELIVERED", "spring", "2024-03-01T09:01:00Z"),
		w.activity("c5", "MAIL_SENT", "spring", "2024-03-01T09:00:00Z"),
		w.activity("c5", "MAIL_BOUNCE", "spring", "2024-03-01T09:02:00Z"),
		w.activity("c5", "MAIL_DELIVERED", "spring", "2024-03-01T09:03:00Z"),
		w.activity("c6", "MAIL_OPEN", "spring", "2024-03-02T10:00:00Z"),
		w.activity("c6", "MAIL_UNSUBSCRIBE", "spring", "2024-03-02T10:05:00Z"),
		w.activity("c6", "MAIL_SPAM_REPORT", "spring", "2024-03-02T10:06:00Z"),
		// flow: c1 in its audience, clicked; the events of the company's
		// own types and BROWSE count for no campaign.
		w.activity("c1", "SMS_SENT", "flow", "2024-03-10T01:00:00Z"),
		w.activity("c1", "SMS_CLICK", "flow", "2024-03-10T02:00:00Z"),
		w.activity("c1", "BROWSE", "flow", "2024-03-10T02:00:00Z"),
		// A campaign that is no campaign here (yet): kept, answered by no one.
		w.activity("c1", "MAIL_SENT", "nobody", "2024-03-10T01:00:00Z"),
	)
}

func (w *statsWorld) products() {
	w.product("p1", "P-1", []string{"Shoes", "Men"})
	w.product("p2", "P-2", "Bags")
	w.product("p3", "P-3", nil)
}

func (w *statsWorld) sales() {
	complete := func(id, customer, date string, rows ...sale.Row) sale.Upserted {
		return sale.Upserted{SaleID: id, ExternalID: "S-" + id, CustomerID: customer, Created: true,
			Set: map[string]any{"sale_date": date, "sale_state": "COMPLETE"}, Rows: rows}
	}
	// c1, reacted 03-02: two conversions (the second with a returned row).
	w.sale(complete("1", "c1", "2024-03-04T00:00:00Z", row("p1", "P-1", 2, 1000, 0), row("p2", "P-2", 1, 300, 50)))
	s2 := complete("2", "c1", "2024-03-20T00:00:00Z", row("p3", "P-3", "1.5", 450, 0), row("p1", "P-1", 1, 0, 0, "CANCELLED"))
	s2.Rows[1].Key = "id:r2"
	w.sale(s2)
	// c2 opened at 12:00, after this sale: no conversion, but a sale.
	w.sale(complete("3", "c2", "2024-03-05T11:00:00Z", row("p2", "P-2", 1, 100, 0)))
	s4 := complete("4", "c2", "2024-03-06T00:00:00Z", row("p2", "P-2", 1, 100, 0))
	s4.Set["sale_state"] = "CANCELLED"
	w.sale(s4)
	// c4 never reacted: a sale, no conversion.
	w.sale(complete("5", "c4", "2024-03-07T00:00:00Z", row("p2", "P-2", 1, 999, 0)))
	// After the window, and of a customer not in the audience.
	w.sale(complete("6", "c1", "2024-04-05T00:00:00Z", row("p2", "P-2", 1, 100, 0)))
	w.sale(complete("7", "c6", "2024-03-10T00:00:00Z", row("p2", "P-2", 1, 100, 0)))
	// c2's conversion, with a sale_total of its own (shipping) and late
	// in the Helsinki day: 2024-03-26 there.
	s8 := complete("8", "c2", "2024-03-25T22:30:00Z", row("p2", "P-2", 2, 600, 0))
	s8.Set["sale_total"] = 650
	w.sale(s8)
}

// wantStatsScenario are the figures of the scenario, worked by hand.
func wantStatsScenario() map[string]*statsJSON {
	return map[string]*statsJSON{
		"spring": {
			// audience c1..c5; c1, c2 reacted; c3 bounced with no delivery;
			// c4, c5 (bounced but delivered) no reaction.
			AudienceSize: 5, AudienceWithEvents: 2, AudienceUnreachable: 1, AudienceNoReaction: 2,
			// c1 (S1, S2), c2 (S3, S8), c4 (S5); S4 cancelled, S6 after.
			AudienceWithSales: 3,
			// S1, S2, S8; S3 came before c2's open.
			SalesForConversion: 3,
			Events:             events(5, 4, 3, 2, 1, 1, 2),
			Sales: salesJSON{
				DateRange:  &map[string]string{"start": "2024-03-04", "end": "2024-03-26"},
				TotalSales: 3, TotalRevenue: 1300 + 450 + 650,
				// 3 + 1.5 (the returned row left out) + 2 = 6.5; / 3 = 2.1666...
				TotalProductsCount: 6.5, AverageProductsCount: 2.17,
				CampaignProductCount: 2, CampaignProductRevenue: 1000,
				OtherProductCount: 4.5, OtherProductRevenue: 300 + 450 + 600,
				ProductCategories: []categoryJSON{
					{Title: "Shoes", Units: 2, Revenue: 1000},
					{Title: "Bags", Units: 3, Revenue: 900, Discount: 50},
					{Title: "Uncategorised", Units: 1.5, Revenue: 450},
				},
			},
		},
		"flow": {
			DateRange:    &map[string]string{"start": "2024-03-10T00:00:00Z", "end": "2024-04-09T00:00:00Z"},
			AudienceSize: 1, AudienceWithEvents: 1,
			// S2 (03-20), after the click of 03-10 02:00, is a conversion
			// of flow as well; S6 (04-05) too, inside flow's window.
			AudienceWithSales: 1, SalesForConversion: 2,
			Events: events(1, 0, 0, 1, 0, 0, 0),
			Sales: salesJSON{
				DateRange:  &map[string]string{"start": "2024-03-20", "end": "2024-04-05"},
				TotalSales: 2, TotalRevenue: 450 + 100, TotalProductsCount: 2.5, AverageProductsCount: 1.25,
				OtherProductCount: 2.5, OtherProductRevenue: 550,
				ProductCategories: []categoryJSON{
					{Title: "Uncategorised", Units: 1.5, Revenue: 450},
					{Title: "Bags", Units: 1, Revenue: 100},
				},
			},
		},
		"later":   nil,
		"outside": nil,
	}
}

// helsinki puts the company in Europe/Helsinki: the sales date_range is
// dates there.
func (e *env) helsinki(co company.Company) {
	e.t.Helper()
	if _, err := e.cmds.UpdateCompanySettings.Handle(context.Background(), commands.UpdateCompanySettings{
		Principal: access.System(co.ID), CompanyID: co.ID, Change: company.SettingsChange{Timezone: pointerTo("Europe/Helsinki")},
	}); err != nil {
		e.t.Fatal(err)
	}
}

// TestCampaignStatsFigures: every figure of the scenario, appended in
// the order things happen (acme) and in the reverse order (globex: sales
// first, then activity, the products, and the campaigns created and
// activated last), gives the hand-computed figures; a rebuild gives them
// again.
func TestCampaignStatsFigures(t *testing.T) {
	e := newEnv(t)
	e.runProjections(campaignstats.NewCampaignStats(), retrievalproj.NewProducts())
	e.helsinki(e.acme)
	e.helsinki(e.globex)
	acme := &statsWorld{e: e, co: e.acme.ID, token: e.userToken(e.admin, acmeHost), host: acmeHost}
	globex := &statsWorld{e: e, co: e.globex.ID, token: e.userToken(e.globexAd, globexHost), host: globexHost}

	acme.products()
	acme.campaigns()
	acme.activities()
	acme.sales()

	globex.sales()
	globex.activities()
	globex.products()
	globex.campaigns()
	e.waitProjections()

	want := wantStatsScenario()
	for _, w := range []*statsWorld{acme, globex} {
		got := statsOf(t, e.campaignStats(w.token, host(w.host)))
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", w.host, diff)
		}
	}

	// The beta endpoint: the same without a window of its own; with
	// sales_start and sales_end (Helsinki dates, both included) the sales
	// figures cover 2024-03-04T22:00:00Z to 2024-03-25T21:59:59.999999Z:
	// S1 (03-04 00:00Z) and S8 (03-25 22:30Z) fall out, S2 stays; S3 and
	// S5 still make c2 and c4 audience with sales.
	res := e.do(http.MethodGet, "/api/beta/campaigns/", bearer(acme.token))
	var beta statsPage
	if res.decode(t, &beta); !cmp.Equal(want, statsOf(t, beta)) {
		t.Errorf("beta (-want +got):\n%s", cmp.Diff(want, statsOf(t, beta)))
	}
	res = e.do(http.MethodGet, "/api/beta/campaigns/?keys=spring&sales_start=2024-03-05&sales_end=2024-03-25", bearer(acme.token))
	res.decode(t, &beta)
	spring := *want["spring"]
	spring.SalesForConversion, spring.AudienceWithSales = 1, 3
	spring.Sales = salesJSON{DateRange: &map[string]string{"start": "2024-03-20", "end": "2024-03-20"},
		TotalSales: 1, TotalRevenue: 450, TotalProductsCount: 1.5, AverageProductsCount: 1.5, OtherProductCount: 1.5,
		OtherProductRevenue: 450, ProductCategories: []categoryJSON{{Title: "Uncategorised", Units: 1.5, Revenue: 450}}}
	if diff := cmp.Diff(map[string]*statsJSON{"spring": &spring}, statsOf(t, beta)); diff != "" {
		t.Errorf("beta with a sales window (-want +got):\n%s", diff)
	}

	// clientele projections rebuild campaign_stats: the same figures.
	e.rebuildAll(campaignstats.NewCampaignStats())
	for _, w := range []*statsWorld{acme, globex} {
		if diff := cmp.Diff(want, statsOf(t, e.campaignStats(w.token, host(w.host)))); diff != "" {
			t.Errorf("%s after a rebuild (-want +got):\n%s", w.host, diff)
		}
	}
}

// TestCampaignStatsCorrections: a sale cancelled later leaves the
// figures, a row returned later leaves the units and revenue of its
// product, a deleted event leaves the counts (and with it a reaction), a
// sale one second before the window ends counts and one second after it
// does not, a reaction after the sale makes no conversion, and a sale
// moved to another customer moves with them.
func TestCampaignStatsCorrections(t *testing.T) {
	e := newEnv(t)
	e.runProjections(campaignstats.NewCampaignStats(), retrievalproj.NewProducts())
	w := &statsWorld{e: e, co: e.acme.ID, token: e.userToken(e.admin, acmeHost), host: acmeHost}
	w.campaign(map[string]any{"campaign_key": "edge", "kind": "email", "name": "Edge", "state": "active",
		"activated_at": "2024-06-01T00:00:00Z", "product_ids": []string{"P-1"}})
	w.product("p1", "P-1", "Shoes")
	w.appendActivity(
		w.activity("a", "MAIL_SENT", "edge", "2024-06-01T00:00:00Z"),
		w.activity("a", "MAIL_OPEN", "edge", "2024-06-01T01:00:00Z"),
		w.activity("b", "MAIL_SENT", "edge", "2024-06-01T00:00:00Z"),
		w.activity("b", "MAIL_CLICK", "edge", "2024-06-10T00:00:00Z"),
	)
	up := func(id, customer, date string, rows ...sale.Row) {
		w.sale(sale.Upserted{SaleID: id, ExternalID: "S-" + id, CustomerID: customer, Created: true,
			Set: map[string]any{"sale_date": date}, Rows: rows})
	}
	// The window ends 2024-07-01T00:00:00Z.
	up("in", "a", "2024-06-30T23:59:59Z", row("p1", "P-1", 2, 2000, 0))
	up("out", "a", "2024-07-01T00:00:01Z", row("p1", "P-1", 1, 1000, 0))
	up("early", "b", "2024-06-09T00:00:00Z", row("p1", "P-1", 1, 500, 0)) // before b's click
	up("late", "b", "2024-06-11T00:00:00Z", row("p1", "P-1", 3, 300, 0))
	e.waitProjections()

	stats := func() statsJSON {
		t.Helper()
		s := statsOf(t, e.campaignStats(w.token))["edge"]
		if s == nil {
			t.Fatal("no stats")
		}
		return *s
	}
	got := stats()
	if got.SalesForConversion != 2 || got.AudienceWithSales != 2 || got.Sales.TotalRevenue != 2300 ||
		got.Sales.TotalProductsCount != 5 || got.Sales.CampaignProductCount != 5 || got.Sales.DateRange == nil ||
		(*got.Sales.DateRange)["start"] != "2024-06-11" || (*got.Sales.DateRange)["end"] != "2024-06-30" {
		t.Errorf("edges: %+v", got)
	}

	// "late" cancelled: gone from the conversions; b still has "early".
	w.sale(sale.Upserted{SaleID: "late", ExternalID: "S-late", CustomerID: "b", Set: map[string]any{"sale_state": "CANCELLED"}})
	e.waitProjections()
	if got := stats(); got.SalesForConversion != 1 || got.AudienceWithSales != 2 || got.Sales.TotalRevenue != 2000 ||
		got.Sales.TotalProductsCount != 2 || (*got.Sales.DateRange)["start"] != "2024-06-30" {
		t.Errorf("after the cancellation: %+v", got)
	}

	// The row of "in" returned: price 0, tag CANCELLED. The sale stays a
	// conversion (revenue 0), its units leave.
	returned := row("p1", "P-1", 2, 0, 0, "CANCELLED")
	w.sale(sale.Upserted{SaleID: "in", ExternalID: "S-in", CustomerID: "a", Rows: []sale.Row{returned}})
	e.waitProjections()
	want := salesJSON{DateRange: &map[string]string{"start": "2024-06-30", "end": "2024-06-30"}, TotalSales: 1,
		ProductCategories: []categoryJSON{}}
	if got := stats(); !cmp.Equal(want, got.Sales) || got.SalesForConversion != 1 {
		t.Errorf("after the return (-want +got):\n%s", cmp.Diff(want, got.Sales))
	}

	// a's open deleted (event 2): a reacted no more, so no conversion.
	w.appendActivity(activityEvent(activity.TypeDeleted, activity.Deleted{ID: 2}))
	e.waitProjections()
	got = stats()
	if diff := cmp.Diff(events(2, 0, 0, 1, 0, 0, 0), got.Events); diff != "" || got.AudienceWithEvents != 1 ||
		got.SalesForConversion != 0 || got.AudienceNoReaction != 1 || got.Sales.DateRange != nil {
		t.Errorf("after the deletion: %+v %s", got, diff)
	}

	// A sale of someone outside the audience, moved to b (who clicked
	// before it), then away again: counted for b only while it is b's.
	w.sale(sale.Upserted{SaleID: "move", ExternalID: "S-move", CustomerID: "c", Created: true,
		Set: map[string]any{"sale_date": "2024-06-20T00:00:00Z", "sale_total": 777}})
	e.waitProjections()
	// a ("in") and b ("early") still have their sales in the window.
	if got := stats(); got.SalesForConversion != 0 || got.AudienceWithSales != 2 {
		t.Errorf("c's sale: %+v", got)
	}
	w.sale(sale.Upserted{SaleID: "move", ExternalID: "S-move", CustomerID: "b"})
	e.waitProjections()
	if got := stats(); got.SalesForConversion != 1 || got.Sales.TotalRevenue != 777 || got.AudienceWithSales != 2 {
		t.Errorf("moved to b: %+v", got)
	}
	w.sale(sale.Upserted{SaleID: "move", ExternalID: "S-move", CustomerID: "c"})
	e.waitProjections()
	if got := stats(); got.SalesForConversion != 0 || got.Sales.TotalRevenue != 0 {
		t.Errorf("moved back to c: %+v", got)
	}
}

// TestCampaignStatsActivityBeforeCampaign: activity of a key no campaign
// has counts once the campaign is created, and its sales once it is
// activated.
func TestCampaignStatsActivityBeforeCampaign(t *testing.T) {
	e := newEnv(t)
	e.runProjections(campaignstats.NewCampaignStats())
	w := &statsWorld{e: e, co: e.acme.ID, token: e.userToken(e.admin, acmeHost), host: acmeHost}
	w.appendActivity(
		w.activity("a", "MAIL_SENT", "soon", "2024-06-01T00:00:00Z"),
		w.activity("a", "MAIL_CLICK", "soon", "2024-06-01T01:00:00Z"),
	)
	w.sale(sale.Upserted{SaleID: "1", ExternalID: "S-1", CustomerID: "a", Created: true,
		Set: map[string]any{"sale_date": "2024-06-02T00:00:00Z", "sale_total": 700}})
	e.waitProjections()
	if p := e.campaignStats(w.token); len(p.Campaigns) != 0 {
		t.Fatalf("campaigns before any: %+v", p)
	}
	w.campaign(map[string]any{"campaign_key": "soon", "kind": "email", "name": "Soon"})
	e.waitProjections()
	if s := statsOf(t, e.campaignStats(w.token))["soon"]; s != nil {
		t.Errorf("a draft has stats: %+v", s)
	}
	if res := e.patchCampaign(w.token, "soon", map[string]any{"state": "active", "activated_at": "2024-06-01T00:00:00Z"}); res.status != http.StatusOK {
		t.Fatalf("activate: %s", res.body)
	}
	e.waitProjections()
	s := statsOf(t, e.campaignStats(w.token))["soon"]
	if s == nil || s.AudienceSize != 1 || s.AudienceWithEvents != 1 || s.SalesForConversion != 1 || s.Sales.TotalRevenue != 700 {
		t.Errorf("once activated: %+v", s)
	}
}

// waitStats polls the statistics until ok, at most 10 seconds, and
// returns how long it took.
func (e *env) waitStats(token string, ok func(map[string]*statsJSON) bool) time.Duration {
	e.t.Helper()
	start := time.Now()
	for time.Since(start) < 10*time.Second {
		var p statsPage
		e.do(http.MethodGet, "/api/campaign/actions/", bearer(token)).decode(e.t, &p)
		got := map[string]*statsJSON{}
		for _, c := range p.Campaigns {
			got[c.CampaignKey] = c.Stats
		}
		if ok(got) {
			return time.Since(start)
		}
		time.Sleep(20 * time.Millisecond)
	}
	e.t.Fatal("the statistics did not move within 10 s")
	return 0
}

// keysOf lists a page's campaign keys.
func keysOf(p statsPage) []string {
	out := []string{}
	for _, c := range p.Campaigns {
		out = append(out, c.CampaignKey)
	}
	return out
}

// TestCampaignActionsPaging: newest first by activated_at (created_at for
// the campaigns never activated, the key breaking ties), or oldest first;
// keys comma-separated or repeated; from/next across pages, which stay
// put while campaigns are created and changed; limits; every spelling of
// the path; 400 for a bad order, limit, from or parameter.
func TestCampaignActionsPaging(t *testing.T) {
	e := newEnv(t)
	admin := e.userToken(e.admin, acmeHost)
	for _, c := range []struct{ key, at string }{{"a1", "2024-01-01"}, {"a2", "2024-02-01"}, {"a3", "2024-03-01"}, {"d1", ""}, {"d2", ""}} {
		body := map[string]any{"campaign_key": c.key, "kind": "email", "name": c.key}
		if c.at != "" {
			body["state"], body["activated_at"] = "active", c.at
		}
		e.createCampaign(admin, body)
	}
	e.createCampaign(e.userToken(e.globexAd, globexHost), map[string]any{"campaign_key": "g1", "kind": "email", "name": "g"}, host(globexHost))

	all := e.campaignStats(admin)
	if all.Order != "descending" || all.Limit != 30 || all.Next != nil ||
		!cmp.Equal(keysOf(all), []string{"d2", "d1", "a3", "a2", "a1"}) {
		t.Errorf("default: %+v %v", all, keysOf(all))
	}
	asc := e.campaignStats(admin, withQuery("order", "ascending"))
	if asc.Order != "ascending" || !cmp.Equal(keysOf(asc), []string{"a1", "a2", "a3", "d1", "d2"}) {
		t.Errorf("ascending: %v", keysOf(asc))
	}

	first := e.campaignStats(admin, withQuery("limit", "2"))
	if first.Limit != 2 || first.Next == nil || !cmp.Equal(keysOf(first), []string{"d2", "d1"}) {
		t.Fatalf("first page: %+v", first)
	}
	// Created and changed between pages: the boundary stays put.
	e.createCampaign(admin, map[string]any{"campaign_key": "a0", "kind": "email", "name": "a0", "state": "active", "activated_at": "2023-12-01"})
	if res := e.patchCampaign(admin, "d2", map[string]any{"name": "renamed"}); res.status != http.StatusOK {
		t.Fatal(string(res.body))
	}
	second := e.campaignStats(admin, withQuery("limit", "2"), withQuery("from", *first.Next))
	if second.Next == nil || !cmp.Equal(keysOf(second), []string{"a3", "a2"}) {
		t.Fatalf("second page: %+v", second)
	}
	third := e.campaignStats(admin, withQuery("limit", "2"), withQuery("from", *second.Next))
	if third.Next != nil || !cmp.Equal(keysOf(third), []string{"a1", "a0"}) {
		t.Errorf("third page: %v next %v", keysOf(third), third.Next)
	}
	up := e.campaignStats(admin, withQuery("limit", "3"), withQuery("order", "ascending"), withQuery("from", *first.Next))
	if !cmp.Equal(keysOf(up), []string{"d2"}) {
		t.Errorf("ascending from d1: %v", keysOf(up))
	}

	res := e.do(http.MethodGet, "/campaign/actions?keys=a1,a3&keys=d1,%20a3&limit=100", bearer(admin))
	res.wantStatus(t, http.StatusOK)
	var keyed statsPage
	res.decode(t, &keyed)
	if !cmp.Equal(keysOf(keyed), []string{"d1", "a3", "a1"}) || keyed.Limit != 100 {
		t.Errorf("keys: %v", keysOf(keyed))
	}
	for _, path := range []string{"/api/campaign/actions", "/campaign/actions/", "/api/beta/campaigns", "/beta/campaigns/"} {
		res := e.do(http.MethodGet, path, bearer(admin), withQuery("keys", "a2"))
		var p statsPage
		if res.decode(t, &p); res.status != http.StatusOK || !cmp.Equal(keysOf(p), []string{"a2"}) {
			t.Errorf("%s: %d %s", path, res.status, res.body)
		}
	}

	for _, q := range []string{"order=up", "order=", "limit=0", "limit=101", "limit=x", "from=bm90", "from=%25%25", "key=a1",
		"sales_start=2024-01-01"} {
		res := e.do(http.MethodGet, "/api/campaign/actions/?"+q, bearer(admin))
		res.wantError(t, http.StatusBadRequest, "invalid_request")
	}
	for _, q := range []string{"sales_start=2024-13-01", "sales_end=x", "sales_start=2024-02-01&sales_end=2024-01-01"} {
		res := e.do(http.MethodGet, "/api/beta/campaigns/?"+q, bearer(admin))
		res.wantError(t, http.StatusBadRequest, "invalid_request")
	}
}

// TestCampaignStatsFreshImport: through the upload pipeline, the figures
// move within seconds of an import's end (no cache); an event's
// campaign_key with spaces around it is the campaign's; a forgotten
// customer's activity and sales stay counted, also after a rebuild.
func TestCampaignStatsFreshImport(t *testing.T) {
	e := newEnv(t)
	async := []projections.Projector{retrievalproj.NewCustomers(e.keys), retrievalproj.NewProducts(), retrievalproj.NewEvents(e.keys),
		retrievalproj.NewSales(e.keys), campaignstats.NewCampaignStats()}
	e.runProjections(async...)
	e.runImports()
	token := e.userToken(e.admin, acmeHost)
	e.importAll(token, "/api/customers/upload/", `[{"external_id": "A", "email": "a@x.test"}, {"external_id": "B"}]`)
	e.createCampaign(token, map[string]any{"campaign_key": "fresh", "kind": "email", "name": "Fresh", "state": "active",
		"activated_at": "2025-01-01T00:00:00Z"})

	run := e.mustUpload(token, "/api/events/upload/", rawBody(`[
		{"type": "MAIL_SENT", "date": "2025-01-01T10:00:00Z", "customer_id": "A", "campaign_key": " fresh "},
		{"type": "MAIL_OPEN", "date": "2025-01-02T10:00:00Z", "customer_id": "A", "campaign_key": "fresh"},
		{"type": "MAIL_SENT", "date": "2025-01-01T10:00:00Z", "customer_id": "B", "campaign_key": "fresh"}]`))
	if a, res := e.waitRun(token, run); a.Import.State != "completed" {
		t.Fatalf("events: %s", res.body)
	}
	took := e.waitStats(token, func(s map[string]*statsJSON) bool {
		return s["fresh"] != nil && s["fresh"].AudienceSize == 2 && s["fresh"].AudienceWithEvents == 1
	})
	t.Logf("events: figures fresh %v after the run ended", took)

	run = e.mustUpload(token, "/api/sales/upload/", rawBody(`[{"sale_external_id": "S-1", "sale_date": "2025-01-05",
		"sale_customer_id": "A", "product_id": "P1", "quantity": 2, "unit_price": 500}]`))
	if a, res := e.waitRun(token, run); a.Import.State != "completed" {
		t.Fatalf("sales: %s", res.body)
	}
	took = e.waitStats(token, func(s map[string]*statsJSON) bool {
		return s["fresh"] != nil && s["fresh"].SalesForConversion == 1 && s["fresh"].Sales.TotalRevenue == 1000
	})
	t.Logf("sales: figures fresh %v after the run ended", took)
	if took > 5*time.Second {
		t.Errorf("the figures took %v", took)
	}

	e.importAll(token, "/api/customers/upload/", `[{"external_id": "A", "is_forgotten": true}]`)
	e.rebuildAll(campaignstats.NewCampaignStats())
	s := statsOf(t, e.campaignStats(token))["fresh"]
	if s == nil || s.AudienceSize != 2 || s.AudienceWithEvents != 1 || s.SalesForConversion != 1 || s.Sales.TotalProductsCount != 2 {
		t.Errorf("after forgetting A and a rebuild: %+v", s)
	}
}
