package campaignstats_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/clientele/clientele/commands"
	"github.com/clientele/clientele/domain/access"
	"github.com/clientele/clientele/domain/activity"
	"github.com/clientele/clientele/domain/campaign"
	"github.com/clientele/clientele/domain/company"
	"github.com/clientele/clientele/domain/sale"
	"github.com/clientele/clientele/eventstore"
	"github.com/clientele/clientele/eventstore/postgres"
	"github.com/clientele/clientele/projections/campaignstats"
	"github.com/clientele/clientele/projections/internal/projectiontest"
)

// readCampaignStats dumps the statistics tables, modified_at left out (it
// is the time of the commits a batch held).
func readCampaignStats(t *testing.T, pool *pgxpool.Pool) []string {
	t.Helper()
	rows, err := pool.Query(context.Background(), `
		SELECT concat_ws('|', 'stats', company_id, campaign_key, activated_at, audience_size, audience_unreachable,
			audience_with_events, audience_with_sales, events::text, total_sales, total_revenue, total_units) FROM campaign_stats
		UNION ALL SELECT concat_ws('|', 'member', company_id, campaign_key, customer_id, counts::text, first_reaction, window_sales)
			FROM campaign_stats_members
		UNION ALL SELECT concat_ws('|', 'conversion', company_id, campaign_key, customer_id, sale_id, sale_date, revenue, units, products::text)
			FROM campaign_stats_conversions
		UNION ALL SELECT concat_ws('|', 'product', company_id, campaign_key, product_id, external_id, units, revenue, discount)
			FROM campaign_stats_products
		UNION ALL SELECT concat_ws('|', 'sale', company_id, sale_id, customer_id, counted, sale_date, revenue, stat_rows::text)
			FROM campaign_stats_sales
		ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestCampaignStatsProjectionBatching: the statistics tables are the same
// whether the log is applied a commit at a time (live), all at once (a
// rebuild's page) or an event at a time, and a commit handed over again
// changes nothing.
func TestCampaignStatsProjectionBatching(t *testing.T) {
	ctx := context.Background()
	pool := projectiontest.PgtestPool(t)
	store := postgres.New(pool)
	cmds := commands.New(store, func() time.Time { return time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC) })
	var companies []string
	for _, slug := range []string{"acme", "globex"} {
		co, err := cmds.CreateCompany.Handle(ctx, commands.CreateCompany{Principal: access.System(""), Slug: slug, Settings: company.Settings{Name: slug}})
		if err != nil {
			t.Fatal(err)
		}
		companies = append(companies, co.ID)
	}
	appendTo := func(co, stream, typ string, data any) {
		t.Helper()
		b, err := json.Marshal(data)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := store.Append(ctx, eventstore.Commit{Metadata: eventstore.Metadata{CompanyID: co, Source: "test"},
			Streams: []eventstore.StreamAppend{{StreamID: stream, ExpectedVersion: eventstore.Any,
				Events: []eventstore.Event{{Type: typ, Data: b}}}}}); err != nil {
			t.Fatal(err)
		}
	}
	for _, co := range companies {
		id := int64(0)
		act := func(customer, typ, date string) {
			id++
			appendTo(co, activity.Stream(co), activity.TypeRecorded, activity.Recorded{ID: id, CustomerID: customer, Type: typ, Date: date,
				Fields: map[string]any{"campaign_key": "K"}})
		}
		up := func(u sale.Upserted) { appendTo(co, sale.Stream(co, u.SaleID), sale.TypeUpserted, u) }
		row := func(qty any, total int64) []sale.Row {
			return []sale.Row{{Key: "id:1", ProductID: "p1", Fields: map[string]any{"product_id": "P-1", "quantity": qty, "total": total}}}
		}
		// A sale before the activity, activity before the campaign, a
		// cancellation and a deletion later.
		up(sale.Upserted{SaleID: "s1", CustomerID: "a", Created: true, Set: map[string]any{"sale_date": "2024-06-03T00:00:00Z"}, Rows: row(2, 200)})
		act("a", "MAIL_SENT", "2024-06-01T01:00:00Z")
		act("a", "MAIL_OPEN", "2024-06-02T00:00:00Z")
		act("b", "MAIL_SENT", "2024-06-01T01:00:00Z")
		act("b", "MAIL_CLICK", "2024-06-01T02:00:00Z")
		in, err := campaign.ParseInput([]byte(`{"campaign_key": "K", "kind": "email", "name": "n", "state": "active", "activated_at": "2024-06-01"}`), time.UTC)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := cmds.CreateCampaign.Handle(ctx, commands.CreateCampaign{Principal: access.System(co), Input: in}); err != nil {
			t.Fatal(err)
		}
		up(sale.Upserted{SaleID: "s2", CustomerID: "b", Created: true, Set: map[string]any{"sale_date": "2024-06-05T00:00:00Z"}, Rows: row("1.5", 150)})
		up(sale.Upserted{SaleID: "s3", CustomerID: "b", Created: true, Set: map[string]any{"sale_date": "2024-06-06T00:00:00Z"}, Rows: row(1, 100)})
		up(sale.Upserted{SaleID: "s3", CustomerID: "b", Set: map[string]any{"sale_state": "CANCELLED"}})
		appendTo(co, activity.Stream(co), activity.TypeDeleted, activity.Deleted{ID: 2})
		act("a", "MAIL_CLICK", "2024-06-02T12:00:00Z")
	}
	last := projectiontest.LastPosition(t, pool)
	var log []eventstore.RecordedEvent
	projectiontest.WaitFor(t, 30*time.Second, "the whole log readable", func() bool {
		var err error
		if log, err = store.ReadLog(ctx, eventstore.Position{}, 10_000); err != nil {
			t.Fatal(err)
		}
		return len(log) > 0 && log[len(log)-1].Position == last
	})
	p := campaignstats.NewCampaignStats()
	applyAll := func(batches [][]eventstore.RecordedEvent) {
		t.Helper()
		for _, b := range batches {
			if err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error { return p.Apply(ctx, tx, b) }); err != nil {
				t.Fatal(err)
			}
		}
	}
	apply := func(batches [][]eventstore.RecordedEvent) []string {
		t.Helper()
		if _, err := pool.Exec(ctx, `TRUNCATE campaign_stats, campaign_stats_events, campaign_stats_members, campaign_stats_sales,
			campaign_stats_conversions, campaign_stats_products`); err != nil {
			t.Fatal(err)
		}
		applyAll(batches)
		return readCampaignStats(t, pool)
	}
	var byCommit, byEvent [][]eventstore.RecordedEvent
	for i, e := range log {
		if i == 0 || e.Position.TxID != log[i-1].Position.TxID {
			byCommit = append(byCommit, nil)
		}
		byCommit[len(byCommit)-1] = append(byCommit[len(byCommit)-1], e)
		byEvent = append(byEvent, []eventstore.RecordedEvent{e})
	}
	want := apply(byCommit)
	// a: sent, open deleted, click at 06-02 12:00 before s1 (06-03): a
	// conversion; b: click before s2, s3 cancelled.
	for _, co := range companies {
		for _, line := range []string{
			fmt.Sprintf("stats|%s|K|2024-06-01 00:00:00+00|2|0|2|2|{2,0,0,2,0,0,0}|2|350|350", co),
			fmt.Sprintf("conversion|%s|K|a|s1|2024-06-03 00:00:00+00|200|200|{\"p1\": {\"units\": 200, \"revenue\": 200, \"discount\": 0, \"external_id\": \"P-1\"}}", co),
		} {
			found := false
			for _, w := range want {
				found = found || w == line
			}
			if !found {
				t.Errorf("no line %s in\n%s", line, want)
			}
		}
	}
	if diff := cmp.Diff(want, apply([][]eventstore.RecordedEvent{log})); diff != "" {
		t.Errorf("the log at once (-by commit +at once):\n%s", diff)
	}
	if diff := cmp.Diff(want, apply(byEvent)); diff != "" {
		t.Errorf("an event at a time (-by commit +by event):\n%s", diff)
	}
	applyAll(byCommit)
	if diff := cmp.Diff(want, readCampaignStats(t, pool)); diff != "" {
		t.Errorf("commits handed over again (-once +again):\n%s", diff)
	}
	// Members decided a few at a time (a big activation's) give the same.
	defer campaignstats.SetDecideChunk(1)()
	if diff := cmp.Diff(want, apply([][]eventstore.RecordedEvent{log})); diff != "" {
		t.Errorf("the log at once, a member at a time (-by commit +chunked):\n%s", diff)
	}
	if diff := cmp.Diff(want, apply(byCommit)); diff != "" {
		t.Errorf("by commit, a member at a time (-by commit +chunked):\n%s", diff)
	}
}

// TestCampaignStatsActivationAfterSales: an activation decides again the
// members with a counted sale in its window, both ends included, sales
// stored before it; and of a sale's rows only the fields the figures
// read are kept.
func TestCampaignStatsActivationAfterSales(t *testing.T) {
	ctx := context.Background()
	pool := projectiontest.PgtestPool(t)
	store := postgres.New(pool)
	cmds := commands.New(store, func() time.Time { return time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC) })
	co, err := cmds.CreateCompany.Handle(ctx, commands.CreateCompany{Principal: access.System(""), Slug: "acme", Settings: company.Settings{Name: "acme"}})
	if err != nil {
		t.Fatal(err)
	}
	appendTo := func(stream, typ string, data any) {
		t.Helper()
		b, err := json.Marshal(data)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := store.Append(ctx, eventstore.Commit{Metadata: eventstore.Metadata{CompanyID: co.ID, Source: "test"},
			Streams: []eventstore.StreamAppend{{StreamID: stream, ExpectedVersion: eventstore.Any,
				Events: []eventstore.Event{{Type: typ, Data: b}}}}}); err != nil {
			t.Fatal(err)
		}
	}
	id := int64(0)
	act := func(customer, typ, date string) {
		id++
		appendTo(activity.Stream(co.ID), activity.TypeRecorded, activity.Recorded{ID: id, CustomerID: customer, Type: typ, Date: date,
			Fields: map[string]any{"campaign_key": "K"}})
	}
	// One buyer a sale each: a member is decided with all its sales, so
	// each edge is a member of its own.
	buyers := map[string]string{"before": "2024-05-31T23:59:59.999999Z", "start": "2024-06-01T00:00:00Z",
		"end": "2024-07-01T00:00:00Z", "after": "2024-07-01T00:00:00.000001Z"}
	for _, c := range []string{"after", "before", "end", "start"} {
		act(c, "MAIL_SENT", "2024-05-30T00:00:00Z")
		act(c, "MAIL_OPEN", "2024-05-31T00:00:00Z")
	}
	act("d", "MAIL_SENT", "2024-05-30T00:00:00Z")
	for c, date := range buyers {
		sid := "s-" + c
		appendTo(sale.Stream(co.ID, sid), sale.TypeUpserted, sale.Upserted{SaleID: sid, CustomerID: c, Created: true,
			Set: map[string]any{"sale_date": date}, Rows: []sale.Row{{Key: "id:1", ProductID: "p1",
				Fields: map[string]any{"product_id": "P-1", "quantity": 1, "total": 100, "name": "Shirt", "ACME__colour": "red"}}}})
	}
	in, err := campaign.ParseInput([]byte(`{"campaign_key": "K", "kind": "email", "name": "n", "state": "active", "activated_at": "2024-06-01"}`), time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cmds.CreateCampaign.Handle(ctx, commands.CreateCampaign{Principal: access.System(co.ID), Input: in}); err != nil {
		t.Fatal(err)
	}
	last := projectiontest.LastPosition(t, pool)
	var log []eventstore.RecordedEvent
	projectiontest.WaitFor(t, 30*time.Second, "the whole log readable", func() bool {
		if log, err = store.ReadLog(ctx, eventstore.Position{}, 10_000); err != nil {
			t.Fatal(err)
		}
		return len(log) > 0 && log[len(log)-1].Position == last
	})
	p := campaignstats.NewCampaignStats()
	for _, e := range log {
		if err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error { return p.Apply(ctx, tx, []eventstore.RecordedEvent{e}) }); err != nil {
			t.Fatal(err)
		}
	}
	var stats string
	if err := pool.QueryRow(ctx, `SELECT concat_ws('|', audience_size, audience_with_events, audience_with_sales, total_sales,
		total_revenue, total_units) FROM campaign_stats WHERE company_id = $1 AND campaign_key = 'K'`, co.ID).Scan(&stats); err != nil {
		t.Fatal(err)
	}
	// The sales at the window's start and end are conversions; d bought
	// nothing.
	if want := "5|4|2|2|200|200"; stats != want {
		t.Errorf("stats %s, want %s", stats, want)
	}
	// A sale outside the window changes no figure: the member is not
	// written again, nor the campaign's cache_modified_at moved.
	var before, after string
	state := func(out *string) {
		t.Helper()
		if err := pool.QueryRow(ctx, `SELECT m.xmin::text || '|' || s.modified_at::text FROM campaign_stats_members m
			JOIN campaign_stats s USING (company_id, campaign_key) WHERE m.company_id = $1 AND m.customer_id = 'd'`, co.ID).Scan(out); err != nil {
			t.Fatal(err)
		}
	}
	state(&before)
	late := sale.Upserted{SaleID: "late", CustomerID: "d", Created: true, Set: map[string]any{"sale_date": "2025-01-01T00:00:00Z"}}
	data, err := json.Marshal(late)
	if err != nil {
		t.Fatal(err)
	}
	e := eventstore.RecordedEvent{Type: sale.TypeUpserted, StreamID: "sale-late", StreamVersion: 1, Data: data,
		RecordedAt: time.Date(2025, 2, 1, 0, 0, 0, 0, time.UTC), Metadata: eventstore.Metadata{CompanyID: co.ID}}
	if err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error { return p.Apply(ctx, tx, []eventstore.RecordedEvent{e}) }); err != nil {
		t.Fatal(err)
	}
	if state(&after); after != before {
		t.Errorf("member d and its campaign after a sale outside the window: %s, before %s", after, before)
	}
	var extra []string
	rows, err := pool.Query(ctx, `SELECT DISTINCT k FROM campaign_stats_sales, jsonb_array_elements(keyed_rows) AS r,
		jsonb_object_keys(r->'fields') AS k WHERE k NOT IN ('product_id', 'quantity', 'total', 'discount', 'tags', 'is_deleted')`)
	if err != nil {
		t.Fatal(err)
	}
	if extra, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
		t.Fatal(err)
	}
	if len(extra) > 0 {
		t.Errorf("row fields kept that the figures do not read: %v", extra)
	}
}
