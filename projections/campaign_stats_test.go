package projections_test

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
	"github.com/clientele/clientele/projections"
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
	pool := pgtestPool(t)
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
			appendTo(co, "activity-"+co, activity.TypeRecorded, activity.Recorded{ID: id, CustomerID: customer, Type: typ, Date: date,
				Fields: map[string]any{"campaign_key": "K"}})
		}
		up := func(u sale.Upserted) { appendTo(co, "sale-"+co+"-"+u.SaleID, sale.TypeUpserted, u) }
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
		appendTo(co, "activity-"+co, activity.TypeDeleted, activity.Deleted{ID: 2})
		act("a", "MAIL_CLICK", "2024-06-02T12:00:00Z")
	}
	last := lastPosition(t, pool)
	var log []eventstore.RecordedEvent
	waitFor(t, 30*time.Second, "the whole log readable", func() bool {
		var err error
		if log, err = store.ReadLog(ctx, eventstore.Position{}, 10_000); err != nil {
			t.Fatal(err)
		}
		return len(log) > 0 && log[len(log)-1].Position == last
	})
	p := projections.NewCampaignStats()
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
}
