package campaignstats_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/clientele/clientele/domain/activity"
	"github.com/clientele/clientele/domain/campaign"
	"github.com/clientele/clientele/domain/sale"
	"github.com/clientele/clientele/eventstore"
	"github.com/clientele/clientele/internal/pg/pgtest"
	"github.com/clientele/clientele/projections/campaignstats"
	"github.com/clientele/clientele/projections/internal/projectiontest"
)

// BenchmarkCampaignStatsApply applies to the campaign_stats projector
// what an import commits, as a delivery does, in a transaction rolled
// back afterwards, over tables holding 20,000 members of 10 active
// campaigns and their sales: "activity" is a commit of 1,000 campaign
// events (groups of five of one new member, as the load driver sends
// them), "sales" a commit of 1,000 sale rows (100 sales of 10 rows) of
// customers in an audience, "page" ten activity commits at once (what a
// catch-up page hands over). go-cpu-ns/op is the CPU of the test process
// alone: the projector's share of a serve process.
func BenchmarkCampaignStatsApply(b *testing.B) {
	ctx := context.Background()
	pool := pgtest.NewPool(b)
	p := campaignstats.NewCampaignStats()
	const company, campaigns, members = "acme", 10, 20_000
	at := time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC)
	pos := int64(0)
	recorded := func(stream, typ string, data any) eventstore.RecordedEvent {
		raw, err := json.Marshal(data)
		if err != nil {
			b.Fatal(err)
		}
		pos++
		return eventstore.RecordedEvent{StreamID: stream, StreamVersion: pos, Type: typ, Data: raw,
			Metadata: eventstore.Metadata{CompanyID: company, Source: "bench"}, RecordedAt: at,
			Position: eventstore.Position{TxID: uint64(pos), Global: pos}}
	}
	activityOf := func(first, n int) []eventstore.RecordedEvent {
		out := make([]eventstore.RecordedEvent, 0, n)
		for i := first; i < first+n; i++ {
			g, j := i/5, i%5
			key := fmt.Sprintf("K%d", g%campaigns)
			typ := [...]string{"MAIL_SENT", "MAIL_DELIVERED", "MAIL_OPEN", "MAIL_CLICK", "MAIL_CLICK"}[j]
			out = append(out, recorded(activity.Stream(company), activity.TypeRecorded, activity.Recorded{ID: int64(i + 1),
				CustomerID: fmt.Sprintf("c%d", g), Type: typ, Date: at.Add(time.Duration(j+1) * time.Hour).Format(time.RFC3339Nano),
				Fields: map[string]any{"campaign_key": key}}))
		}
		return out
	}
	salesOf := func(first, n int) []eventstore.RecordedEvent {
		out := make([]eventstore.RecordedEvent, 0, n)
		for s := first; s < first+n; s++ {
			rows := make([]sale.Row, 10)
			for r := range rows {
				rows[r] = sale.Row{Key: fmt.Sprintf("id:%d", r), ProductID: fmt.Sprintf("p%d", (s+r)%100),
					Fields: map[string]any{"product_id": fmt.Sprintf("P-%d", (s+r)%100), "quantity": json.Number("2"),
						"total": json.Number("1000"), "discount": json.Number("50"), "name": "Shirt"}}
			}
			id := fmt.Sprintf("s%d", s)
			out = append(out, recorded(sale.Stream(company, id), sale.TypeUpserted, sale.Upserted{SaleID: id, ExternalID: id,
				CustomerID: fmt.Sprintf("c%d", s%members), Created: true, Rows: rows,
				Set: map[string]any{"sale_date": at.Add(48 * time.Hour).Format(time.RFC3339Nano), "sale_state": "COMPLETED"}}))
		}
		return out
	}
	apply := func(b *testing.B, events []eventstore.RecordedEvent, commit bool) {
		tx, err := pool.Begin(ctx)
		if err != nil {
			b.Fatal(err)
		}
		defer tx.Rollback(ctx) //nolint:errcheck
		if err := p.Apply(ctx, tx, events); err != nil {
			b.Fatal(err)
		}
		if commit {
			if err := tx.Commit(ctx); err != nil {
				b.Fatal(err)
			}
		}
	}
	var setup []eventstore.RecordedEvent
	for k := range campaigns {
		key := fmt.Sprintf("K%d", k)
		setup = append(setup, recorded(campaign.Stream(company, key), campaign.CreatedType, campaign.Created{Key: key, Kind: "email", CreatedAt: at}),
			recorded(campaign.Stream(company, key), campaign.ActivatedType, campaign.Activated{Key: key, ActivatedAt: at, UpdatedAt: at}))
	}
	apply(b, setup, true)
	for first := 0; first < 5*members; first += 10_000 {
		apply(b, activityOf(first, 10_000), true)
	}
	for first := 0; first < 2000; first += 1000 {
		apply(b, salesOf(first, 1000), true)
	}
	if _, err := pool.Exec(ctx, `VACUUM ANALYZE`); err != nil {
		b.Fatal(err)
	}
	run := func(b *testing.B, events []eventstore.RecordedEvent) {
		cpu := projectiontest.ProcessCPU(b)
		for b.Loop() {
			apply(b, events, false)
		}
		b.ReportMetric(float64((projectiontest.ProcessCPU(b)-cpu).Nanoseconds())/float64(b.N), "go-cpu-ns/op")
	}
	b.Run("activity", func(b *testing.B) { run(b, activityOf(5*members, 1000)) })
	b.Run("sales", func(b *testing.B) { run(b, salesOf(5000, 100)) })
	b.Run("page", func(b *testing.B) { run(b, activityOf(5*members, 10_000)) })
}
