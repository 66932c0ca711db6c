package systemtest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/clientele/clientele/api"
	"github.com/clientele/clientele/app"
	"github.com/clientele/clientele/domain/activity"
	"github.com/clientele/clientele/domain/campaign"
	"github.com/clientele/clientele/domain/sale"
	"github.com/clientele/clientele/eventstore/postgres"
	"github.com/clientele/clientele/projections"
	"github.com/clientele/clientele/projections/campaignstats"
	"github.com/clientele/clientele/projections/datasync"
	retrievalproj "github.com/clientele/clientele/projections/retrieval"
)

// The rules of the campaign statistics (decisions.md, Campaigns;
// docs/campaigns.md, Statistics) that the figures, corrections and fresh
// import tests leave untested, each through the upload pipeline and
// GET /api/campaign/actions/ with figures worked by hand.

// newRulesEnv is an env whose rate limit is off (the tests upload and
// poll); runRulesProjections starts the projectors the statistics read
// and the import worker.
func newRulesEnv(t *testing.T) *env {
	t.Helper()
	return newEnv(t, func(c *api.Config, _ *app.Application) { c.RateLimit = math.Inf(1) })
}

func (e *env) runRulesProjections(extra ...projections.Projector) {
	e.t.Helper()
	e.runProjections(append([]projections.Projector{retrievalproj.NewCustomers(e.keys), retrievalproj.NewProducts(),
		retrievalproj.NewEvents(e.keys), retrievalproj.NewSales(e.keys), campaignstats.NewCampaignStats()}, extra...)...)
	e.runImports()
}

// rulesStats reads the statistics of the campaign key, which must have
// some.
func (e *env) rulesStats(token, key string) statsJSON {
	e.t.Helper()
	p := e.campaignStats(token, withQuery("keys", key))
	if len(p.Campaigns) != 1 || p.Campaigns[0].CampaignKey != key || p.Campaigns[0].Stats == nil {
		e.t.Fatalf("stats of %s: %+v", key, p)
	}
	return *p.Campaigns[0].Stats
}

// rulesCommitTime is the time of the company's last commit with an event
// of type typ, as cache_modified_at answers it.
func (e *env) rulesCommitTime(companyID, typ string) string {
	e.t.Helper()
	var at time.Time
	if err := e.pool.QueryRow(context.Background(), `SELECT recorded_at FROM events WHERE company_id = $1 AND event_type = $2
		ORDER BY global_position DESC LIMIT 1`, companyID, typ).Scan(&at); err != nil {
		e.t.Fatalf("commit of %s: %v", typ, err)
	}
	return at.UTC().Format(time.RFC3339Nano)
}

// rulesNoCache is s without cache_modified_at, for comparing figures.
func rulesNoCache(s statsJSON) statsJSON {
	s.CacheModifiedAt = nil
	return s
}

// rulesCacheOf is s's cache_modified_at, "null" when null.
func rulesCacheOf(s statsJSON) string {
	if s.CacheModifiedAt == nil {
		return "null"
	}
	return *s.CacheModifiedAt
}

// rulesSale is a flat sale record of one row of product P1, quantity 1,
// with extra transaction fields.
func rulesSale(id, customer, date string, price int64, extra string) string {
	if extra != "" {
		extra = ", " + extra
	}
	return fmt.Sprintf(`{"sale_external_id": %q, "sale_customer_id": %q, "sale_date": %q, "product_id": "P1", "quantity": 1, "unit_price": %d%s}`,
		id, customer, date, price, extra)
}

// rulesUncategorised is the sales figures of n conversions of one unit of P1
// each (no campaign product, no category), revenue in all, dated day.
func rulesUncategorised(n int, revenue int64, day string) salesJSON {
	s := salesJSON{TotalSales: n, TotalRevenue: revenue, ProductCategories: []categoryJSON{}}
	if n > 0 {
		s.DateRange = &map[string]string{"start": day, "end": day}
		s.TotalProductsCount, s.AverageProductsCount, s.OtherProductCount, s.OtherProductRevenue = float64(n), 1, float64(n), revenue
		s.ProductCategories = []categoryJSON{{Title: "Uncategorised", Units: float64(n), Revenue: revenue}}
	}
	return s
}

// TestCampaignRulesSaleStates: a counted sale is one whose state is not
// CANCELLED or CLOSED and that is not deleted (decisions.md: NEW,
// PENDING_PAYMENT, PROCESSING, COMPLETE and HOLDED count); an uncounted
// sale is neither a conversion nor makes its customer one of the
// audience with sales, and a sale closed or deleted later leaves the
// figures.
func TestCampaignRulesSaleStates(t *testing.T) {
	e := newRulesEnv(t)
	e.runRulesProjections()
	token := e.userToken(e.admin, acmeHost)
	e.importAll(token, "/api/customers/upload/", `[{"external_id": "R"}, {"external_id": "X"}, {"external_id": "Y"}, {"external_id": "V"}]`)
	e.createCampaign(token, map[string]any{"campaign_key": "st", "kind": "email", "name": "States", "state": "active",
		"activated_at": "2024-03-01T00:00:00Z"})
	// R opened; X and Y clicked; V never reacted. All before the sales.
	e.importAll(token, "/api/events/upload/", `[
		{"type": "MAIL_SENT", "date": "2024-03-01T09:00:00Z", "customer_id": "R", "campaign_key": "st"},
		{"type": "MAIL_OPEN", "date": "2024-03-01T10:00:00Z", "customer_id": "R", "campaign_key": "st"},
		{"type": "MAIL_SENT", "date": "2024-03-01T09:00:00Z", "customer_id": "X", "campaign_key": "st"},
		{"type": "MAIL_CLICK", "date": "2024-03-01T10:00:00Z", "customer_id": "X", "campaign_key": "st"},
		{"type": "MAIL_SENT", "date": "2024-03-01T09:00:00Z", "customer_id": "Y", "campaign_key": "st"},
		{"type": "MAIL_CLICK", "date": "2024-03-01T10:00:00Z", "customer_id": "Y", "campaign_key": "st"},
		{"type": "MAIL_SENT", "date": "2024-03-01T09:00:00Z", "customer_id": "V", "campaign_key": "st"}]`)
	// Every sale in the window, after every reaction. R has one sale in
	// each state and one deleted; the amounts are powers of two, so the
	// revenue tells which sales counted.
	const day, date = "2024-03-05", "2024-03-05T12:00:00Z"
	var recs []string
	for i, state := range sale.States {
		recs = append(recs, rulesSale("R-"+state, "R", date, 100<<i, `"sale_state": "`+state+`"`))
	}
	recs = append(recs,
		rulesSale("R-DELETED", "R", date, 100<<len(sale.States), `"sale_state": "COMPLETE", "sale_is_deleted": true`),
		rulesSale("X-CLOSED", "X", date, 50, `"sale_state": "CLOSED"`),
		rulesSale("Y-DELETED", "Y", date, 60, `"sale_is_deleted": true`),
		rulesSale("V-1", "V", date, 70, `"sale_state": "COMPLETE"`))
	if rej := e.importAll(token, "/api/sales/upload/", "["+strings.Join(recs, ",\n")+"]"); len(rej) != 0 {
		t.Fatalf("rejections %v", rej)
	}

	// sale.States is NEW, PENDING_PAYMENT, PROCESSING, COMPLETE,
	// CANCELLED, CLOSED, HOLDED: 100, 200, 400, 800, (1600), (3200), 6400
	// count; the deleted sale (12800), X's closed and Y's deleted sale do
	// not, so X and Y, who reacted, have no sale; V has one without
	// reacting.
	if !cmp.Equal(sale.States, []string{"NEW", "PENDING_PAYMENT", "PROCESSING", "COMPLETE", "CANCELLED", "CLOSED", "HOLDED"}) {
		t.Fatalf("sale states %v: the amounts below assume decisions.md's order", sale.States)
	}
	want := statsJSON{AudienceSize: 4, AudienceWithEvents: 3, AudienceNoReaction: 1, AudienceWithSales: 2,
		SalesForConversion: 5, Events: events(4, 0, 1, 2, 0, 0, 0),
		Sales: rulesUncategorised(5, 100+200+400+800+6400, day)}
	if diff := cmp.Diff(want, rulesNoCache(e.rulesStats(token, "st"))); diff != "" {
		t.Errorf("sales in every state (-want +got):\n%s", diff)
	}

	// Later: R's COMPLETE sale closed, R's HOLDED sale deleted (only the
	// fields that change), V's sale closed: V has no sale any more.
	e.importAll(token, "/api/sales/upload/", `[
		{"sale_external_id": "R-COMPLETE", "sale_state": "CLOSED"},
		{"sale_external_id": "R-HOLDED", "sale_is_deleted": true},
		{"sale_external_id": "V-1", "sale_state": "CLOSED"}]`)
	want.AudienceWithSales, want.SalesForConversion, want.Sales = 1, 3, rulesUncategorised(3, 100+200+400, day)
	if diff := cmp.Diff(want, rulesNoCache(e.rulesStats(token, "st"))); diff != "" {
		t.Errorf("after closing and deleting (-want +got):\n%s", diff)
	}
}

// TestCampaignRulesDeletedAndForgottenCustomers: deleting and forgetting
// customers changes no figure, live: not the figures already counted
// (nor cache_modified_at: nothing changed), and not those of a campaign
// activated afterwards, whose members the activation decides again from
// what the projection kept of their activity and sales; a rebuild gives
// the same.
func TestCampaignRulesDeletedAndForgottenCustomers(t *testing.T) {
	e := newRulesEnv(t)
	e.runRulesProjections()
	token := e.userToken(e.admin, acmeHost)
	e.importAll(token, "/api/customers/upload/", `[{"external_id": "D"}, {"external_id": "F"}, {"external_id": "K"}]`)
	e.createCampaign(token, map[string]any{"campaign_key": "kept", "kind": "email", "name": "Kept", "state": "active",
		"activated_at": "2024-03-01T00:00:00Z"})
	// "after" has no campaign yet: its activity is kept until it has.
	e.importAll(token, "/api/events/upload/", `[
		{"type": "MAIL_SENT", "date": "2024-03-01T09:00:00Z", "customer_id": "D", "campaign_key": "kept"},
		{"type": "MAIL_OPEN", "date": "2024-03-02T09:00:00Z", "customer_id": "D", "campaign_key": "kept"},
		{"type": "MAIL_SENT", "date": "2024-03-01T09:00:00Z", "customer_id": "F", "campaign_key": "kept"},
		{"type": "MAIL_CLICK", "date": "2024-03-02T09:00:00Z", "customer_id": "F", "campaign_key": "kept"},
		{"type": "MAIL_SENT", "date": "2024-03-01T09:00:00Z", "customer_id": "K", "campaign_key": "kept"},
		{"type": "MAIL_OPEN", "date": "2024-03-02T09:00:00Z", "customer_id": "K", "campaign_key": "kept"},
		{"type": "SMS_SENT", "date": "2024-03-10T01:00:00Z", "customer_id": "D", "campaign_key": "after"},
		{"type": "SMS_CLICK", "date": "2024-03-10T02:00:00Z", "customer_id": "D", "campaign_key": "after"},
		{"type": "SMS_SENT", "date": "2024-03-10T01:00:00Z", "customer_id": "F", "campaign_key": "after"},
		{"type": "SMS_CLICK", "date": "2024-03-10T02:00:00Z", "customer_id": "F", "campaign_key": "after"}]`)
	if rej := e.importAll(token, "/api/sales/upload/", "["+strings.Join([]string{
		rulesSale("D-1", "D", "2024-03-05T12:00:00Z", 100, ""),
		rulesSale("F-1", "F", "2024-03-05T12:00:00Z", 200, ""),
		rulesSale("K-1", "K", "2024-03-05T12:00:00Z", 400, ""),
		rulesSale("D-2", "D", "2024-03-15T12:00:00Z", 1000, ""),
		rulesSale("F-2", "F", "2024-03-15T12:00:00Z", 2000, ""),
	}, ",\n")+"]"); len(rej) != 0 {
		t.Fatalf("rejections %v", rej)
	}

	// kept (window 03-01 to 03-31): D, F, K reacted on 03-02; all five
	// sales are conversions.
	wantKept := statsJSON{AudienceSize: 3, AudienceWithEvents: 3, AudienceWithSales: 3, SalesForConversion: 5,
		Events: events(3, 0, 2, 1, 0, 0, 0), Sales: rulesUncategorised(5, 100+200+400+1000+2000, "")}
	wantKept.Sales.DateRange = &map[string]string{"start": "2024-03-05", "end": "2024-03-15"}
	before := e.rulesStats(token, "kept")
	if diff := cmp.Diff(wantKept, rulesNoCache(before)); diff != "" {
		t.Fatalf("before (-want +got):\n%s", diff)
	}

	if rej := e.importAll(token, "/api/customers/upload/",
		`[{"external_id": "D", "is_deleted": true}, {"external_id": "F", "is_forgotten": true}]`); len(rej) != 0 {
		t.Fatalf("deleting and forgetting: rejections %v", rej)
	}
	// They are gone: their events are refused from now on.
	if rej := e.importAll(token, "/api/events/upload/", `[
		{"type": "MAIL_CLICK", "date": "2024-03-03T09:00:00Z", "customer_id": "D", "campaign_key": "kept"},
		{"type": "MAIL_CLICK", "date": "2024-03-03T09:00:00Z", "customer_id": "F", "campaign_key": "kept"}]`); len(rej) != 2 {
		t.Fatalf("events of the deleted and the forgotten customer: rejections %v, want both", rej)
	}
	after := e.rulesStats(token, "kept")
	if diff := cmp.Diff(before, after); diff != "" {
		t.Errorf("kept after deleting D and forgetting F (-before +after):\n%s", diff)
	}

	// after, activated now at 03-10 (window 03-10 to 04-09): D and F in
	// its audience, both clicked 03-10 02:00, and their sales of 03-15
	// are its conversions (those of 03-05 are before its window).
	e.createCampaign(token, map[string]any{"campaign_key": "after", "kind": "sms", "name": "After", "state": "active",
		"activated_at": "2024-03-10T00:00:00Z"})
	e.waitProjections()
	wantAfter := statsJSON{AudienceSize: 2, AudienceWithEvents: 2, AudienceWithSales: 2, SalesForConversion: 2,
		Events: events(2, 0, 0, 2, 0, 0, 0), Sales: rulesUncategorised(2, 1000+2000, "2024-03-15")}
	if diff := cmp.Diff(wantAfter, rulesNoCache(e.rulesStats(token, "after"))); diff != "" {
		t.Errorf("a campaign activated after deleting and forgetting (-want +got):\n%s", diff)
	}

	e.rebuildAll(campaignstats.NewCampaignStats())
	for key, want := range map[string]statsJSON{"kept": wantKept, "after": wantAfter} {
		if diff := cmp.Diff(want, rulesNoCache(e.rulesStats(token, key))); diff != "" {
			t.Errorf("%s after a rebuild (-want +got):\n%s", key, diff)
		}
	}
}

// TestCampaignRulesCacheModifiedAt: cache_modified_at is null while the
// projection has not seen the campaign (an active campaign's figures are
// then all zero), then the time of the commit that created and activated
// it, then the time of each later commit that changes a figure, and does
// not move for commits that change none (a customer import, a sale out
// of the window, a sale of a customer in no audience, a sale of a member
// who never reacted and has a sale in the window already).
func TestCampaignRulesCacheModifiedAt(t *testing.T) {
	e := newRulesEnv(t)
	token := e.userToken(e.admin, acmeHost)
	co := e.acme.ID
	e.createCampaign(token, map[string]any{"campaign_key": "cm", "kind": "email", "name": "Cache", "state": "active",
		"activated_at": "2024-03-01T00:00:00Z"})

	// No projector runs yet.
	zero := statsJSON{Events: events(0, 0, 0, 0, 0, 0, 0), Sales: rulesUncategorised(0, 0, "")}
	if diff := cmp.Diff(zero, e.rulesStats(token, "cm")); diff != "" {
		t.Errorf("before the projection saw the campaign (-want +got):\n%s", diff)
	}

	e.runRulesProjections()
	e.waitProjections()
	created := e.rulesCommitTime(co, campaign.CreatedType)
	if activated := e.rulesCommitTime(co, campaign.ActivatedType); activated != created {
		t.Fatalf("creation at %s, activation at %s: want one commit", created, activated)
	}
	check := func(what, want string, wantFigures statsJSON) {
		t.Helper()
		got := e.rulesStats(token, "cm")
		if rulesCacheOf(got) != want {
			t.Errorf("%s: cache_modified_at %s, want %s", what, rulesCacheOf(got), want)
		}
		if diff := cmp.Diff(wantFigures, rulesNoCache(got)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", what, diff)
		}
	}
	check("created", created, zero)

	e.importAll(token, "/api/customers/upload/", `[{"external_id": "A"}, {"external_id": "B"}, {"external_id": "N"}]`)
	check("customers imported", created, zero)

	e.importAll(token, "/api/events/upload/", `[
		{"type": "MAIL_SENT", "date": "2024-03-01T09:00:00Z", "customer_id": "A", "campaign_key": "cm"},
		{"type": "MAIL_OPEN", "date": "2024-03-02T09:00:00Z", "customer_id": "A", "campaign_key": "cm"},
		{"type": "MAIL_SENT", "date": "2024-03-01T09:00:00Z", "customer_id": "B", "campaign_key": "cm"}]`)
	activityAt := e.rulesCommitTime(co, activity.TypeRecorded)
	figures := statsJSON{AudienceSize: 2, AudienceWithEvents: 1, AudienceNoReaction: 1, Events: events(2, 0, 1, 0, 0, 0, 0),
		Sales: rulesUncategorised(0, 0, "")}
	check("activity", activityAt, figures)

	e.importAll(token, "/api/sales/upload/", "["+rulesSale("S-1", "A", "2024-03-05T12:00:00Z", 500, "")+","+
		rulesSale("S-B1", "B", "2024-03-06T12:00:00Z", 30, "")+"]")
	saleAt := e.rulesCommitTime(co, sale.TypeUpserted)
	figures.AudienceWithSales, figures.SalesForConversion, figures.Sales = 2, 1, rulesUncategorised(1, 500, "2024-03-05")
	check("a conversion", saleAt, figures)
	for _, at := range [][2]string{{created, activityAt}, {activityAt, saleAt}} {
		a, errA := time.Parse(time.RFC3339Nano, at[0])
		b, errB := time.Parse(time.RFC3339Nano, at[1])
		if errA != nil || errB != nil || !b.After(a) {
			t.Errorf("cache_modified_at %s then %s: want it moving forward", at[0], at[1])
		}
	}

	// Commits that change no figure: A's sale after the window (which
	// ends 03-31), N's (in no audience), and B's second sale in the
	// window (B never reacted and has one already).
	e.importAll(token, "/api/sales/upload/", "["+rulesSale("S-2", "A", "2024-04-02T12:00:00Z", 700, "")+","+
		rulesSale("S-N", "N", "2024-03-05T12:00:00Z", 900, "")+","+rulesSale("S-B2", "B", "2024-03-07T12:00:00Z", 40, "")+"]")
	if later := e.rulesCommitTime(co, sale.TypeUpserted); later == saleAt {
		t.Fatalf("the second sales import made no commit")
	}
	check("sales that change no figure", saleAt, figures)

	// O opens the campaign without being sent it: the open counts, O is
	// not in the audience. O's sale in the window then changes no
	// figure (it is stored on O's row, for the day O is sent it).
	e.importAll(token, "/api/customers/upload/", `[{"external_id": "O"}]`)
	e.importAll(token, "/api/events/upload/", `[
		{"type": "MAIL_OPEN", "date": "2024-03-02T09:00:00Z", "customer_id": "O", "campaign_key": "cm"}]`)
	openAt := e.rulesCommitTime(co, activity.TypeRecorded)
	figures.Events = events(2, 0, 2, 0, 0, 0, 0)
	check("an open outside the audience", openAt, figures)
	e.importAll(token, "/api/sales/upload/", "["+rulesSale("S-O", "O", "2024-03-05T12:00:00Z", 800, "")+"]")
	check("a sale of a customer outside the audience", openAt, figures)
}

// TestCampaignRulesReactionAtTheSaleInstant: a conversion needs a
// reaction strictly before the sale's date: an open or a click at the
// sale's very instant makes none (the sale still makes its customer one
// of the audience with sales), one a microsecond before it does.
func TestCampaignRulesReactionAtTheSaleInstant(t *testing.T) {
	e := newRulesEnv(t)
	e.runRulesProjections()
	token := e.userToken(e.admin, acmeHost)
	e.importAll(token, "/api/customers/upload/", `[{"external_id": "A"}, {"external_id": "B"}, {"external_id": "C"}, {"external_id": "D"}]`)
	e.createCampaign(token, map[string]any{"campaign_key": "edge", "kind": "email", "name": "Edge", "state": "active",
		"activated_at": "2024-03-01T00:00:00Z"})
	const reaction = "2024-03-02T10:00:00Z"
	e.importAll(token, "/api/events/upload/", `[
		{"type": "MAIL_SENT", "date": "2024-03-01T09:00:00Z", "customer_id": "A", "campaign_key": "edge"},
		{"type": "MAIL_OPEN", "date": "`+reaction+`", "customer_id": "A", "campaign_key": "edge"},
		{"type": "MAIL_SENT", "date": "2024-03-01T09:00:00Z", "customer_id": "B", "campaign_key": "edge"},
		{"type": "MAIL_CLICK", "date": "`+reaction+`", "customer_id": "B", "campaign_key": "edge"},
		{"type": "MAIL_SENT", "date": "2024-03-01T09:00:00Z", "customer_id": "C", "campaign_key": "edge"},
		{"type": "MAIL_OPEN", "date": "`+reaction+`", "customer_id": "C", "campaign_key": "edge"},
		{"type": "MAIL_SENT", "date": "2024-03-01T09:00:00Z", "customer_id": "D", "campaign_key": "edge"},
		{"type": "MAIL_CLICK", "date": "`+reaction+`", "customer_id": "D", "campaign_key": "edge"}]`)
	const justAfter = "2024-03-02T10:00:00.000001Z"
	if rej := e.importAll(token, "/api/sales/upload/", "["+strings.Join([]string{
		rulesSale("S-A", "A", reaction, 100, ""),
		rulesSale("S-B", "B", reaction, 200, ""),
		rulesSale("S-C", "C", justAfter, 400, ""),
		rulesSale("S-D", "D", justAfter, 800, ""),
	}, ",\n")+"]"); len(rej) != 0 {
		t.Fatalf("rejections %v", rej)
	}
	// The sales are stored at the microsecond.
	dates := map[string]string{}
	for _, s := range e.retrieveAll(token, "sales", withQuery("limit", "10")).Items {
		dates[fmt.Sprint(s["sale_external_id"])] = fmt.Sprint(s["sale_date"])
	}
	if want := map[string]string{"S-A": reaction, "S-B": reaction, "S-C": justAfter, "S-D": justAfter}; !cmp.Equal(want, dates) {
		t.Fatalf("sale dates %v, want %v", dates, want)
	}

	// A (open) and B (click) reacted at their sale's instant: sales, no
	// conversions; C and D a microsecond before: conversions.
	want := statsJSON{AudienceSize: 4, AudienceWithEvents: 4, AudienceWithSales: 4, SalesForConversion: 2,
		Events: events(4, 0, 2, 2, 0, 0, 0), Sales: rulesUncategorised(2, 400+800, "2024-03-02")}
	if diff := cmp.Diff(want, rulesNoCache(e.rulesStats(token, "edge"))); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// TestCampaignRulesDatasyncOnSales: a datasync datatarget of campaigns
// takes a message after a sales import that changes a campaign's
// figures (a conversion, a sale of an audience member who did not
// react, a cancellation), with the campaign as GET /api/campaign/actions/
// answers it, one per campaign changed; a sales import that changes no
// figure sends nothing.
func TestCampaignRulesDatasyncOnSales(t *testing.T) {
	e := newRulesEnv(t)
	e.runRulesProjections(datasync.NewDatasync(e.keys, postgres.EventLog{}))
	token := e.userToken(e.admin, acmeHost)
	co := e.acme.ID
	e.importAll(token, "/api/customers/upload/", `[{"external_id": "A"}, {"external_id": "B"}, {"external_id": "N"}]`)
	for _, key := range []string{"c5", "other", "quiet"} {
		e.createCampaign(token, map[string]any{"campaign_key": key, "kind": "email", "name": key, "state": "active",
			"activated_at": "2024-03-01T00:00:00Z"})
	}
	e.importAll(token, "/api/events/upload/", `[
		{"type": "MAIL_SENT", "date": "2024-03-01T09:00:00Z", "customer_id": "A", "campaign_key": "c5"},
		{"type": "MAIL_OPEN", "date": "2024-03-02T09:00:00Z", "customer_id": "A", "campaign_key": "c5"},
		{"type": "MAIL_SENT", "date": "2024-03-01T09:00:00Z", "customer_id": "B", "campaign_key": "other"}]`)
	dash := e.createDatasync(token, "dashboard", map[string]any{"datatype": "campaigns"})["id"].(string)
	e.waitProjections()
	if p := e.syncMessages(token, dash); len(p.Messages) != 0 {
		t.Fatalf("before any sale: %+v", p.Messages)
	}

	// messages returns the datatarget's messages from the n-th (0-based)
	// by campaign key, each checked to be what the statistics endpoint
	// answers now, with update_id a log position.
	messages := func(what string, from int) map[string]statsJSON {
		t.Helper()
		p := e.syncMessages(token, dash)
		out := map[string]statsJSON{}
		if len(p.Messages) < from {
			t.Fatalf("%s: %d messages, fewer than before", what, len(p.Messages))
		}
		for _, m := range p.Messages[from:] {
			b, err := json.Marshal(m.Data)
			if err != nil {
				t.Fatal(err)
			}
			var c statsCampaign
			if err := json.Unmarshal(b, &c); err != nil {
				t.Fatal(err)
			}
			if id, err := strconv.ParseInt(m.UpdateID, 10, 64); m.Datatype != "campaigns" || err != nil || id <= 0 || c.Stats == nil {
				t.Errorf("%s: message %+v", what, m)
				continue
			}
			if _, twice := out[c.CampaignKey]; twice {
				t.Errorf("%s: two messages of %s", what, c.CampaignKey)
			}
			out[c.CampaignKey] = *c.Stats
			if diff := cmp.Diff(e.rulesStats(token, c.CampaignKey), *c.Stats); diff != "" {
				t.Errorf("%s: %s's message is not its statistics (-answer +message):\n%s", what, c.CampaignKey, diff)
			}
		}
		return out
	}

	// A converts (c5); B, in other's audience without reacting, has a
	// sale in its window; quiet is untouched.
	e.importAll(token, "/api/sales/upload/", "["+rulesSale("S-A", "A", "2024-03-05T12:00:00Z", 700, "")+","+
		rulesSale("S-B", "B", "2024-03-05T12:00:00Z", 300, "")+"]")
	saleAt := e.rulesCommitTime(co, sale.TypeUpserted)
	got := messages("first sales", 0)
	c5 := statsJSON{AudienceSize: 1, AudienceWithEvents: 1, AudienceWithSales: 1, SalesForConversion: 1,
		Events: events(1, 0, 1, 0, 0, 0, 0), Sales: rulesUncategorised(1, 700, "2024-03-05"), CacheModifiedAt: &saleAt}
	other := statsJSON{AudienceSize: 1, AudienceNoReaction: 1, AudienceWithSales: 1, Events: events(1, 0, 0, 0, 0, 0, 0),
		Sales: rulesUncategorised(0, 0, ""), CacheModifiedAt: &saleAt}
	if diff := cmp.Diff(map[string]statsJSON{"c5": c5, "other": other}, got); diff != "" {
		t.Errorf("messages of the first sales (-want +got):\n%s", diff)
	}

	// N is in no audience: no figure changes, no message.
	e.importAll(token, "/api/sales/upload/", "["+rulesSale("S-N", "N", "2024-03-05T12:00:00Z", 900, "")+"]")
	if got := messages("a sale of no member", 2); len(got) != 0 {
		t.Errorf("a sale of no member: messages %v", got)
	}

	// A's sale cancelled: c5's conversion goes, one message.
	e.importAll(token, "/api/sales/upload/", `[{"sale_external_id": "S-A", "sale_state": "CANCELLED"}]`)
	cancelledAt := e.rulesCommitTime(co, sale.TypeUpserted)
	c5.AudienceWithSales, c5.SalesForConversion, c5.Sales, c5.CacheModifiedAt = 0, 0, rulesUncategorised(0, 0, ""), &cancelledAt
	if diff := cmp.Diff(map[string]statsJSON{"c5": c5}, messages("the cancellation", 2)); diff != "" {
		t.Errorf("messages of the cancellation (-want +got):\n%s", diff)
	}
}

// TestCampaignRulesDefaultLimit: without limit, a page is 30 campaigns,
// with a next naming the 31st; following it answers the rest, in either
// order.
func TestCampaignRulesDefaultLimit(t *testing.T) {
	e := newRulesEnv(t)
	token := e.userToken(e.admin, acmeHost)
	var keys []string // ascending: drafts of one created_at, by key
	for i := range 31 {
		key := fmt.Sprintf("p%02d", i)
		keys = append(keys, key)
		e.createCampaign(token, map[string]any{"campaign_key": key, "kind": "email", "name": key})
	}
	reversed := make([]string, len(keys))
	for i, k := range keys {
		reversed[len(keys)-1-i] = k
	}
	for _, tc := range []struct {
		order string
		keys  []string
	}{{"descending", reversed}, {"ascending", keys}} {
		var opts []option
		if tc.order == "ascending" {
			opts = append(opts, withQuery("order", tc.order))
		}
		first := e.campaignStats(token, opts...)
		if first.Limit != 30 || first.Order != tc.order || first.Next == nil || !cmp.Equal(tc.keys[:30], keysOf(first)) {
			t.Errorf("%s, first page: limit %d, order %s, next %v, keys %v", tc.order, first.Limit, first.Order, first.Next, keysOf(first))
			continue
		}
		second := e.campaignStats(token, append(opts, withQuery("from", *first.Next))...)
		if second.Limit != 30 || second.Next != nil || !cmp.Equal(tc.keys[30:], keysOf(second)) {
			t.Errorf("%s, second page: limit %d, next %v, keys %v", tc.order, second.Limit, second.Next, keysOf(second))
		}
	}
}
