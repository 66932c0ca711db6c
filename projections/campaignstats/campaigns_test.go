package campaignstats_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/clientele/clientele/commands"
	"github.com/clientele/clientele/domain/access"
	"github.com/clientele/clientele/domain/campaign"
	"github.com/clientele/clientele/domain/company"
	"github.com/clientele/clientele/eventstore"
	"github.com/clientele/clientele/eventstore/postgres"
	"github.com/clientele/clientele/projections/campaignstats"
	"github.com/clientele/clientele/projections/internal/projectiontest"
)

func readCampaigns(t *testing.T, pool *pgxpool.Pool) []string {
	t.Helper()
	rows, err := pool.Query(context.Background(), `SELECT concat_ws('|', company_id, campaign_key, kind, state, name, utm_campaign,
		campaign_tags::text, folder::text, marketing_permission, product_ids::text, created_by, created_at, activated_at, updated_at, version)
		FROM campaigns ORDER BY company_id, campaign_key`)
	if err != nil {
		t.Fatal(err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestCampaignsProjectionBatching applies one log to the campaigns table
// in batches of every size the projector meets (a commit at a time, as
// inline; the whole log, as a rebuild page; an event at a time, as a page
// boundary inside a commit would cut it) and gets the same table, the
// one the campaigns' streams fold into.
func TestCampaignsProjectionBatching(t *testing.T) {
	ctx := context.Background()
	pool := projectiontest.PgtestPool(t)
	store := postgres.New(pool)
	clock := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	cmds := commands.New(store, func() time.Time { clock = clock.Add(time.Second); return clock })
	var companies []string
	for _, slug := range []string{"acme", "globex"} {
		co, err := cmds.CreateCompany.Handle(ctx, commands.CreateCompany{Principal: access.System(""), Slug: slug, Settings: company.Settings{Name: slug}})
		if err != nil {
			t.Fatal(err)
		}
		companies = append(companies, co.ID)
	}
	input := func(body string) campaign.Input {
		in, err := campaign.ParseInput([]byte(body), time.UTC)
		if err != nil {
			t.Fatal(err)
		}
		return in
	}
	for _, co := range companies {
		p := access.System(co)
		for _, body := range []string{
			`{"campaign_key": "K", "kind": "email", "name": "n", "folder": {"id": 1, "name": "F"}, "product_ids": ["P"]}`,
			`{"kind": "automated-sms", "name": "gen", "state": "active", "activated_at": "2024-01-01"}`,
			`{"kind": "EXT", "name": "x", "state": "archived"}`,
		} {
			if _, err := cmds.CreateCampaign.Handle(ctx, commands.CreateCampaign{Principal: p, Input: input(body)}); err != nil {
				t.Fatal(err)
			}
		}
		for _, body := range []string{
			`{"name": "m", "state": "active"}`,
			`{"campaign_tags": [{"id": "t", "label": "T"}], "folder": ""}`,
			`{"state": "paused", "product_ids": ["P", "Q"]}`,
			`{"state": "active"}`,
			`{"utm_campaign": "u", "state": "archived"}`,
		} {
			if _, err := cmds.UpdateCampaign.Handle(ctx, commands.UpdateCampaign{Principal: p, Key: "K", Input: input(body)}); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := cmds.UpdateCampaign.Handle(ctx, commands.UpdateCampaign{Principal: p, Key: "CA-1", Input: input(`{"state": "paused"}`)}); err != nil {
			t.Fatal(err)
		}
	}
	// ReadLog stops at the oldest transaction running on the test server,
	// which other test processes may hold open for a while.
	last := projectiontest.LastPosition(t, pool)
	var log []eventstore.RecordedEvent
	projectiontest.WaitFor(t, 30*time.Second, "the whole log readable", func() bool {
		var err error
		if log, err = store.ReadLog(ctx, eventstore.Position{}, 10_000); err != nil {
			t.Fatal(err)
		}
		return len(log) > 0 && log[len(log)-1].Position == last
	})

	apply := func(batches [][]eventstore.RecordedEvent) []string {
		t.Helper()
		if _, err := pool.Exec(ctx, `TRUNCATE campaigns`); err != nil {
			t.Fatal(err)
		}
		for _, b := range batches {
			if err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error { return campaignstats.Campaigns{}.Apply(ctx, tx, b) }); err != nil {
				t.Fatal(err)
			}
		}
		return readCampaigns(t, pool)
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
	if len(want) != 6 {
		t.Fatalf("table %v", want)
	}
	if diff := cmp.Diff(want, apply([][]eventstore.RecordedEvent{log})); diff != "" {
		t.Errorf("the log at once (-by commit +at once):\n%s", diff)
	}
	if diff := cmp.Diff(want, apply(byEvent)); diff != "" {
		t.Errorf("an event at a time (-by commit +by event):\n%s", diff)
	}
	// Commits handed over again, the latest last or first, change
	// nothing: an older one is not applied over a newer.
	apply(byCommit)
	for i := range byCommit {
		for _, b := range [][]eventstore.RecordedEvent{byCommit[i], byCommit[len(byCommit)-1-i]} {
			if err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error { return campaignstats.Campaigns{}.Apply(ctx, tx, b) }); err != nil {
				t.Fatal(err)
			}
		}
	}
	if diff := cmp.Diff(want, readCampaigns(t, pool)); diff != "" {
		t.Errorf("commits handed over again (-once +again):\n%s", diff)
	}

	// The table is what the domain folds the streams into.
	for _, co := range companies {
		var state, name string
		var activated *time.Time
		var ids []string
		if err := pool.QueryRow(ctx, `SELECT state, name, activated_at, product_ids FROM campaigns WHERE company_id = $1 AND campaign_key = 'K'`, co).
			Scan(&state, &name, &activated, &ids); err != nil {
			t.Fatal(err)
		}
		if state != "archived" || name != "m" || activated == nil || !cmp.Equal(ids, []string{"P", "Q"}) {
			t.Errorf("K of %s: %s %s %v %v", co, state, name, activated, ids)
		}
	}
}

// TestCampaignsProjectionClockBackwards: a campaign changed by a node
// whose clock is behind the one that created it (or after the clock was
// set back) has an updated_at earlier than its creation's. The table
// holds what the domain folds the stream into, however the log is cut
// into batches: inline (a commit at a time) and a rebuild (the whole log
// at once) give the same row.
func TestCampaignsProjectionClockBackwards(t *testing.T) {
	ctx := context.Background()
	pool := projectiontest.PgtestPool(t)
	store := postgres.New(pool)
	created := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	clock := created
	cmds := commands.New(store, func() time.Time { return clock })
	co, err := cmds.CreateCompany.Handle(ctx, commands.CreateCompany{Principal: access.System(""), Slug: "acme", Settings: company.Settings{Name: "acme"}})
	if err != nil {
		t.Fatal(err)
	}
	p := access.System(co.ID)
	input := func(body string) campaign.Input {
		in, err := campaign.ParseInput([]byte(body), time.UTC)
		if err != nil {
			t.Fatal(err)
		}
		return in
	}
	if _, err := cmds.CreateCampaign.Handle(ctx, commands.CreateCampaign{Principal: p, Input: input(`{"campaign_key": "K", "kind": "email", "name": "n"}`)}); err != nil {
		t.Fatal(err)
	}
	clock = created.Add(-time.Hour) // another node, behind
	if _, err := cmds.UpdateCampaign.Handle(ctx, commands.UpdateCampaign{Principal: p, Key: "K", Input: input(`{"name": "m", "state": "active"}`)}); err != nil {
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
	fold := campaign.Campaign{CompanyID: co.ID}
	var byCommit [][]eventstore.RecordedEvent
	for i, e := range log {
		if i == 0 || e.Position.TxID != log[i-1].Position.TxID {
			byCommit = append(byCommit, nil)
		}
		byCommit[len(byCommit)-1] = append(byCommit[len(byCommit)-1], e)
		if e.StreamID == campaign.Stream(co.ID, "K") {
			ev, err := campaign.Decode(e.Type, e.Data)
			if err != nil {
				t.Fatal(err)
			}
			fold = fold.Apply(ev)
		}
	}
	apply := func(batches [][]eventstore.RecordedEvent) time.Time {
		t.Helper()
		if _, err := pool.Exec(ctx, `TRUNCATE campaigns`); err != nil {
			t.Fatal(err)
		}
		for _, b := range batches {
			if err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error { return campaignstats.Campaigns{}.Apply(ctx, tx, b) }); err != nil {
				t.Fatal(err)
			}
		}
		var at time.Time
		if err := pool.QueryRow(ctx, `SELECT updated_at FROM campaigns WHERE company_id = $1 AND campaign_key = 'K'`, co.ID).Scan(&at); err != nil {
			t.Fatal(err)
		}
		return at.UTC()
	}
	if !fold.UpdatedAt.Equal(clock) {
		t.Fatalf("the fold's updated_at %v, want the last change's %v", fold.UpdatedAt, clock)
	}
	if got := apply(byCommit); !got.Equal(fold.UpdatedAt) {
		t.Errorf("a commit at a time (inline): updated_at %v, the stream's %v", got, fold.UpdatedAt)
	}
	if got := apply([][]eventstore.RecordedEvent{log}); !got.Equal(fold.UpdatedAt) {
		t.Errorf("the log at once (a rebuild): updated_at %v, the stream's %v", got, fold.UpdatedAt)
	}
}
