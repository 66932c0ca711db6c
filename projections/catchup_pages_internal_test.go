package projections

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/clientele/clientele/eventstore"
	"github.com/clientele/clientele/eventstore/postgres"
	"github.com/clientele/clientele/internal/bus"
	"github.com/clientele/clientele/internal/pg/pgtest"
)

// paged is a PageApplier that counts events per stream in table paged,
// records the size of each call, and fails on a "Boom" event.
type paged struct{ calls []int }

func (*paged) Name() string     { return "paged" }
func (*paged) Tables() []string { return []string{"paged"} }
func (*paged) AppliesPages()    {}

func (p *paged) Apply(ctx context.Context, tx pgx.Tx, events []eventstore.RecordedEvent) error {
	p.calls = append(p.calls, len(events))
	var streams []string
	for _, e := range events {
		if e.Type == "Boom" {
			return errors.New("boom")
		}
		streams = append(streams, e.StreamID)
	}
	_, err := tx.Exec(ctx, `INSERT INTO paged AS t (stream_id, n) SELECT s, count(*) FROM unnest($1::text[]) AS u(s) GROUP BY s
		ON CONFLICT (stream_id) DO UPDATE SET n = t.n + EXCLUDED.n`, streams)
	return err
}

// TestPagedCatchUp: a PageApplier behind the log catches up a page of
// commits per call, and a page holding a commit it cannot apply is
// applied commit by commit instead: that commit's company is parked, the
// others' commits are applied.
func TestPagedCatchUp(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	if _, err := pool.Exec(ctx, `CREATE TABLE paged (stream_id text PRIMARY KEY, n bigint NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	store := postgres.New(pool)
	// last is the position of the last commit appended: the log shows
	// it once no earlier transaction of the server (of any database, as
	// other tests' are) may still commit before it.
	var last eventstore.Position
	appendEvent := func(company, stream, typ string) {
		t.Helper()
		c, err := store.Append(ctx, eventstore.Commit{Metadata: eventstore.Metadata{CompanyID: company, Source: "test"},
			Streams: []eventstore.StreamAppend{{StreamID: stream, ExpectedVersion: eventstore.Any,
				Events: []eventstore.Event{{Type: typ, Data: []byte(`{}`)}}}}})
		if err != nil {
			t.Fatal(err)
		}
		last = c.Last
	}
	p := &paged{}
	r, err := NewRuntime(RuntimeConfig{Pool: pool, Store: store, Async: []Projector{p},
		ConsumerSettings: bus.ConsumerSettings{MessageAttempts: 1, RetryMaxInterval: time.Millisecond, StallAfter: time.Hour}})
	if err != nil {
		t.Fatal(err)
	}
	counts := func() map[string]int {
		t.Helper()
		rows, err := pool.Query(ctx, `SELECT stream_id, n FROM paged`)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]int{}
		var s string
		var n int
		if _, err := pgx.ForEachRow(rows, []any{&s, &n}, func() error { out[s] = n; return nil }); err != nil {
			t.Fatal(err)
		}
		return out
	}
	catchUp := func() {
		t.Helper()
		var head eventstore.Position
		deadline := time.Now().Add(time.Minute)
		for {
			var err error
			if head, err = store.Head(ctx); err != nil {
				t.Fatal(err)
			}
			if !head.Less(last) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the log's head %v never reached the last commit %v", head, last)
			}
			time.Sleep(10 * time.Millisecond)
		}
		if _, err := r.catchUp(ctx, p, head); err != nil {
			t.Fatal(err)
		}
	}

	for i := range 10 {
		appendEvent("acme", fmt.Sprintf("a%d", i%3), "Ticked")
	}
	catchUp()
	if len(p.calls) != 1 || p.calls[0] != 10 {
		t.Errorf("calls %v, want one of the 10 commits", p.calls)
	}
	if got := counts(); got["a0"] != 4 || got["a1"] != 3 || got["a2"] != 3 {
		t.Errorf("counts %v", got)
	}

	p.calls = nil
	appendEvent("acme", "a0", "Ticked")
	appendEvent("acme", "boom", "Boom")
	appendEvent("globex", "g", "Ticked")
	appendEvent("acme", "a1", "Ticked")
	appendEvent("globex", "g", "Ticked")
	catchUp()
	if got := counts(); got["a0"] != 5 || got["a1"] != 3 || got["g"] != 2 {
		t.Errorf("counts %v: want acme's commit before the failing one and globex's applied, acme's after it held", got)
	}
	stalls, err := r.Stalls(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(stalls) != 1 || stalls[0].CompanyID != "acme" {
		t.Errorf("stalls %+v, want acme parked", stalls)
	}
	// Parked, the projector goes on commit by commit.
	p.calls = nil
	appendEvent("globex", "g", "Ticked")
	appendEvent("globex", "g", "Ticked")
	catchUp()
	if got := counts(); got["g"] != 4 {
		t.Errorf("counts %v, want globex's later commits applied", got)
	}
	if len(p.calls) != 2 {
		t.Errorf("calls %v, want one a commit while a company is parked", p.calls)
	}
}
