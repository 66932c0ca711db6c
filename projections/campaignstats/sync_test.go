package campaignstats_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"

	"github.com/clientele/clientele/commands"
	"github.com/clientele/clientele/domain/access"
	"github.com/clientele/clientele/domain/activity"
	"github.com/clientele/clientele/domain/campaign"
	"github.com/clientele/clientele/domain/company"
	"github.com/clientele/clientele/domain/datatarget"
	"github.com/clientele/clientele/eventstore"
	"github.com/clientele/clientele/eventstore/postgres"
	"github.com/clientele/clientele/projections"
	"github.com/clientele/clientele/projections/campaignstats"
	"github.com/clientele/clientele/projections/internal/projectiontest"
	"github.com/clientele/clientele/projections/projectors"
)

// TestCampaignSyncBatchStraddlesDatatarget: a batch of several commits (a
// page of the paged catch-up, or of a rebuild) gives a datasync
// datatarget of campaigns only the changes after its creation, and after
// the last change it took: never a campaign changed earlier in the same
// batch. Per commit: D created after K, so K is never D's; K2 created
// after D is; activity of K2 after that is again.
func TestCampaignSyncBatchStraddlesDatatarget(t *testing.T) {
	ctx := context.Background()
	pool := projectiontest.PgtestPool(t)
	store := postgres.New(pool)
	rt, err := projections.NewRuntime(projections.RuntimeConfig{Pool: pool, Store: store, Inline: projectors.Inline()})
	if err != nil {
		t.Fatal(err)
	}
	store.AddHook(rt.InlineHook())
	cmds := commands.New(store, time.Now)
	co, err := cmds.CreateCompany.Handle(ctx, commands.CreateCompany{Principal: access.System(""), Slug: "acme", Settings: company.Settings{Name: "acme"}})
	if err != nil {
		t.Fatal(err)
	}
	createCampaign := func(key string) {
		t.Helper()
		in, err := campaign.ParseInput([]byte(`{"campaign_key": "`+key+`", "kind": "email", "name": "n", "state": "active", "activated_at": "2024-06-01"}`), time.UTC)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := cmds.CreateCampaign.Handle(ctx, commands.CreateCampaign{Principal: access.System(co.ID), Input: in}); err != nil {
			t.Fatal(err)
		}
	}
	createCampaign("K")
	d, err := cmds.CreateDatatarget.Handle(ctx, commands.CreateDatatarget{Principal: access.System(co.ID), Type: datatarget.Datasync,
		Name: "dashboard", Settings: datatarget.Settings{Datatype: datatarget.Campaigns}})
	if err != nil {
		t.Fatal(err)
	}
	createCampaign("K2")
	data, err := json.Marshal(activity.Recorded{ID: 1, CustomerID: "a", Type: "MAIL_SENT", Date: "2024-06-02T00:00:00Z",
		Fields: map[string]any{"campaign_key": "K2"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.Append(ctx, eventstore.Commit{Metadata: eventstore.Metadata{CompanyID: co.ID, Source: "test"},
		Streams: []eventstore.StreamAppend{{StreamID: activity.Stream(co.ID), ExpectedVersion: eventstore.Any,
			Events: []eventstore.Event{{Type: activity.TypeRecorded, Data: data}}}}}); err != nil {
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
	var byCommit [][]eventstore.RecordedEvent
	for i, e := range log {
		if i == 0 || e.Position.TxID != log[i-1].Position.TxID {
			byCommit = append(byCommit, nil)
		}
		byCommit[len(byCommit)-1] = append(byCommit[len(byCommit)-1], e)
	}
	p := campaignstats.NewCampaignStats()
	apply := func(batch []eventstore.RecordedEvent) {
		t.Helper()
		if err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error { return p.Apply(ctx, tx, batch) }); err != nil {
			t.Fatal(err)
		}
	}
	messages := func() []string {
		t.Helper()
		rows, err := pool.Query(ctx, `SELECT number || ':' || entity_id FROM campaign_sync_messages WHERE datatarget_id = $1 ORDER BY number`, d.ID)
		if err != nil {
			t.Fatal(err)
		}
		out, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	reset := func(sync bool) {
		t.Helper()
		tables := `campaign_stats, campaign_stats_events, campaign_stats_members, campaign_stats_sales, campaign_stats_conversions, campaign_stats_products`
		if sync {
			tables += `, campaign_sync_targets, campaign_sync_messages`
		}
		if _, err := pool.Exec(ctx, `TRUNCATE `+tables); err != nil {
			t.Fatal(err)
		}
	}

	// The paged catch-up: the whole log as one page.
	apply(log)
	if diff := cmp.Diff([]string{"1:K2"}, messages()); diff != "" {
		t.Errorf("the log as one page (-want +got):\n%s", diff)
	}

	// Live commit by commit up to K2's creation, then a rebuild's page
	// over the whole log: only the activity after it is new to D.
	reset(true)
	for _, c := range byCommit[:len(byCommit)-1] {
		apply(c)
	}
	if diff := cmp.Diff([]string{"1:K2"}, messages()); diff != "" {
		t.Fatalf("commit by commit (-want +got):\n%s", diff)
	}
	reset(false)
	apply(log)
	if diff := cmp.Diff([]string{"1:K2", "2:K2"}, messages()); diff != "" {
		t.Errorf("a rebuild's page across the datatarget's last change (-want +got):\n%s", diff)
	}
}
