package segments_test

import (
	"context"
	"encoding/json"
	"github.com/clientele/clientele/readmodels/segmentfactstest"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"

	"github.com/clientele/clientele/domain/activity"
	"github.com/clientele/clientele/domain/customer"
	"github.com/clientele/clientele/domain/segment"
	"github.com/clientele/clientele/eventstore"
	"github.com/clientele/clientele/eventstore/postgres"
	"github.com/clientele/clientele/internal/pg/pgtest"
	"github.com/clientele/clientele/projections"
	"github.com/clientele/clientele/projections/internal/projectiontest"
	"github.com/clientele/clientele/projections/segments"
)

// membership is what a backfill leaves: the members, the entries and
// exits it recorded, and the timers.
type membership struct {
	Members map[string]time.Time // segment/customer -> entered_at
	History []string             // segment/customer/member/at/cause, in the order recorded
	Timers  map[string]time.Time // customer -> due_at
}

func readMembership(t *testing.T, ctx context.Context, tx pgx.Tx, company string, afterSeq int64) membership {
	t.Helper()
	m := membership{Members: map[string]time.Time{}, Timers: map[string]time.Time{}}
	rows, err := tx.Query(ctx, `SELECT segment_key || '/' || customer_id, entered_at FROM segment_members WHERE company_id = $1`, company)
	if err != nil {
		t.Fatal(err)
	}
	var k string
	var at time.Time
	if _, err := pgx.ForEachRow(rows, []any{&k, &at}, func() error { m.Members[k] = at; return nil }); err != nil {
		t.Fatal(err)
	}
	rows, err = tx.Query(ctx, `SELECT concat_ws('/', segment_key, customer_id, member, to_char(at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US'), cause)
		FROM segment_history WHERE company_id = $1 AND seq > $2 ORDER BY seq`, company, afterSeq)
	if err != nil {
		t.Fatal(err)
	}
	if m.History, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
		t.Fatal(err)
	}
	rows, err = tx.Query(ctx, `SELECT customer_id, due_at FROM segment_timers WHERE company_id = $1`, company)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pgx.ForEachRow(rows, []any{&k, &at}, func() error { m.Timers[k] = at; return nil }); err != nil {
		t.Fatal(err)
	}
	return m
}

func lastSeq(t *testing.T, ctx context.Context, tx pgx.Tx) int64 {
	t.Helper()
	var seq int64
	if err := tx.QueryRow(ctx, `SELECT coalesce(max(seq), 0) FROM segment_history`).Scan(&seq); err != nil {
		t.Fatal(err)
	}
	return seq
}

// TestBackfillSameAsDecidingEveryone compares the backfill of changed
// segments (only they and the segments naming them decided, on only the
// facts their rules read, in ranges of customers: 700 here, so that
// ranges are crossed) with deciding every segment for every customer
// with the evaluator of a commit touching customers (the reference),
// over generated facts with every kind of leaf: a segment created
// (naming one not affected, whose members are read), changed, archived,
// made active again, and two at once, two days after the members were
// decided (timers fired first, as a commit fires them). Members and
// history must be the same; a timer the same for a created segment, and
// never later otherwise (an earlier one fires and changes nothing:
// deciding everyone after the backfill records nothing).
func TestBackfillSameAsDecidingEveryone(t *testing.T) {
	pool := pgtest.NewPool(t)
	ctx := context.Background()
	t0 := time.Date(2026, 3, 15, 12, 0, 0, 0, time.UTC)
	t1 := t0.Add(49 * time.Hour)
	const company, n = "co", 3000
	segments.SetBackfillRange(t, 700) // five ranges, the last short
	segments.DecideOnAllFacts(t)      // the reference decides on every fact
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	segmentfactstest.Insert(t, ctx, tx, company, n, t0)
	setMixedRules(t, ctx, tx, company)
	setRule(t, ctx, tx, company, "gone", `{"segment":"s01"}`, "archived")
	if err := segments.DecideEveryone(ctx, tx, company, t0); err != nil {
		t.Fatal(err)
	}
	if err := segments.FireDueCompany(ctx, tx, company, t1); err != nil {
		t.Fatal(err)
	}
	base := readMembership(t, ctx, tx, company, 0)
	if len(base.Members) < n || len(base.Timers) == 0 {
		t.Fatalf("the base has %d members and %d timers", len(base.Members), len(base.Timers))
	}
	seq := lastSeq(t, ctx, tx)

	type rule struct{ key, rule, state string }
	for _, tc := range []struct {
		name    string
		rules   []rule
		created bool
	}{
		{"created", []rule{{"new", `{"all":[{"any":[{"segment":"s14"},{"segment":"s06"}]},{"not":{"segment":"s04"}},
			{"any":[{"event":{"type":"CLICK","where":[{"field":"label","in":["cart","list"]}],"within_days":14}},
				{"not":{"sales":{"within_days":30,"product_id":"P1"}}}]},{"field":"age","lt":60}]}`, "active"}}, true},
		{"changed with dependents", []rule{{"s01", `{"field":"city","eq":"Turku"}`, "active"}}, false},
		{"changed event window", []rule{{"s08", `{"event":{"type":"BROWSE","within_days":7}}`, "active"}}, false},
		{"archived with dependents", []rule{{"s04", mixedRules[3][1], "archived"}}, false},
		{"made active", []rule{{"gone", `{"segment":"s01"}`, "active"}}, false},
		{"two at once", []rule{{"s11", `{"sales":{"min_revenue":100,"min_count":2}}`, "active"},
			{"s03", `{"field":"tags","contains":"a"}`, "active"}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run := func(decide func(tx pgx.Tx) error) membership {
				sp, err := tx.Begin(ctx)
				if err != nil {
					t.Fatal(err)
				}
				defer func() { _ = sp.Rollback(ctx) }()
				for _, r := range tc.rules {
					setRule(t, ctx, sp, company, r.key, r.rule, r.state)
				}
				if err := decide(sp); err != nil {
					t.Fatal(err)
				}
				return readMembership(t, ctx, sp, company, seq)
			}
			var keys []string
			for _, r := range tc.rules {
				keys = append(keys, r.key)
			}
			var again []string
			got := run(func(tx pgx.Tx) error {
				if err := segments.BackfillChanged(ctx, tx, company, t1, keys); err != nil {
					return err
				}
				// Deciding everyone again changes nothing.
				at := lastSeq(t, ctx, tx)
				if err := segments.DecideEveryone(ctx, tx, company, t1); err != nil {
					return err
				}
				again = readMembership(t, ctx, tx, company, at).History
				return nil
			})
			want := run(func(tx pgx.Tx) error { return segments.DecideEveryone(ctx, tx, company, t1) })
			if len(want.History) == 0 {
				t.Fatal("the change moves no member: no test")
			}
			t.Logf("%d entries and exits", len(want.History))
			if d := cmp.Diff(want.Members, got.Members); d != "" {
				t.Errorf("members (-reference +backfill):\n%s", d)
			}
			if d := cmp.Diff(want.History, got.History); d != "" {
				t.Errorf("history (-reference +backfill):\n%s", d)
			}
			if len(again) > 0 {
				t.Errorf("deciding everyone after the backfill recorded %d entries and exits, first %s", len(again), again[0])
			}
			// The timers, read before deciding everyone again.
			gotTimers := run(func(tx pgx.Tx) error { return segments.BackfillChanged(ctx, tx, company, t1, keys) }).Timers
			if tc.created {
				if d := cmp.Diff(want.Timers, gotTimers); d != "" {
					t.Errorf("timers (-reference +backfill):\n%s", d)
				}
				return
			}
			for id, due := range want.Timers {
				if g, ok := gotTimers[id]; !ok || g.After(due) {
					t.Errorf("the timer of %s: %v, the reference's %v", id, g, due)
				}
			}
		})
	}
}

// TestSegmentChangedWithFactsInOneCommit: a commit that changes a
// segment and the facts of a customer decides that customer on every
// segment with the cause of its facts (here an event), and the others
// by the backfill with the cause rule; a rebuild gives the same history.
func TestSegmentChangedWithFactsInOneCommit(t *testing.T) {
	e := newMembersEnv(t)
	co := "acme"
	for _, c := range []struct{ id, city string }{{"c1", "Helsinki"}, {"c2", "Turku"}, {"c3", "Helsinki"}} {
		e.Upsert(co, c.id, customer.Changes{Set: map[string]any{"external_id": c.id, "city": c.city}})
	}
	created := e.createSegment(co, "hel", `{"field":"city","eq":"Helsinki"}`)
	e.createSegment(co, "hot", `{"all":[{"segment":"hel"},{"event":{"type":"BROWSE","within_days":7}}]}`)
	changed, err := json.Marshal(segment.Changed{Key: "hel", Name: "hel", Rule: json.RawMessage(`{"field":"city","eq":"Turku"}`)})
	if err != nil {
		t.Fatal(err)
	}
	c := projectiontest.MustAppend(t, e.Store, eventstore.Commit{
		Metadata: eventstore.Metadata{CompanyID: co, Source: "test"},
		Streams: []eventstore.StreamAppend{
			{StreamID: segment.Stream(co, "hel"), ExpectedVersion: eventstore.Any,
				Events: []eventstore.Event{{Type: segment.ChangedType, Data: changed}}},
			{StreamID: activity.Stream(co), ExpectedVersion: eventstore.Any,
				Events: []eventstore.Event{projectiontest.RecordedEv(activity.Recorded{ID: 1, CustomerID: "c2", Type: "BROWSE",
					Date: time.Now().UTC().Add(-time.Hour).Format("2006-01-02T15:04:05Z")})}},
		},
	})
	var at time.Time
	if err := e.Pool.QueryRow(context.Background(), `SELECT recorded_at FROM events WHERE global_position = $1`, c.Last.Global).Scan(&at); err != nil {
		t.Fatal(err)
	}
	e.caughtUp()
	stamp := func(at time.Time) string { return at.UTC().Format(time.RFC3339Nano) }
	want := []string{
		"hel c1 true " + stamp(created) + " rule",
		"hel c3 true " + stamp(created) + " rule",
		"hel c1 false " + stamp(at) + " rule",
		"hel c3 false " + stamp(at) + " rule",
		"hel c2 true " + stamp(at) + " event",
		"hot c2 true " + stamp(at) + " event",
	}
	history := e.history(co)
	if d := cmp.Diff(want, history); d != "" {
		t.Errorf("history (-want +got):\n%s", d)
	}
	if err := projections.Rebuild(context.Background(), e.Pool, e.Store, postgres.EventLog{}, e.members, projections.KindAsync, nil); err != nil {
		t.Fatal(err)
	}
	e.caughtUp()
	if d := cmp.Diff(history, e.history(co)); d != "" {
		t.Errorf("history after a rebuild (-before +after):\n%s", d)
	}
}
