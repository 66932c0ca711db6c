package projections_test

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/clientele/clientele/eventstore"
	"github.com/clientele/clientele/eventstore/postgres"
	"github.com/clientele/clientele/internal/bus"
	"github.com/clientele/clientele/internal/pg/pgtest"
	"github.com/clientele/clientele/projections"
)

// breakable fails every commit holding a "Boom" event while broken.
type breakable struct {
	counter
	broken atomic.Bool
}

func (b *breakable) Apply(ctx context.Context, tx pgx.Tx, events []eventstore.RecordedEvent) error {
	for _, e := range events {
		if e.Type == "Boom" && b.broken.Load() {
			return errBoom
		}
	}
	return b.counter.Apply(ctx, tx, events)
}

// TestPoisonCommitStopsOnlyItsProjector: a commit that one projector
// cannot apply stops that projector there and nothing else. The other
// projectors, and the later commits, go on (a delivery that keeps failing
// gives up instead of holding its transaction, which would hold back every
// log reader of the server); the stopped projector applies no commit
// after the failed one, and once the commit can be applied (here: the
// projector is fixed; in production: a fix is deployed) it resumes where it
// stopped, without a new commit to trigger it, and ends exactly as if
// nothing had happened.
func TestPoisonCommitStopsOnlyItsProjector(t *testing.T) {
	pool := pgtest.NewPool(t)
	createCounterTable(t, pool, "healthy")
	createCounterTable(t, pool, "poisoned")
	store := postgres.New(pool, bus.CommitPublisher{})
	healthy := counter{"healthy", "healthy"}
	poisoned := &breakable{counter: counter{"poisoned", "poisoned"}}
	poisoned.broken.Store(true)
	reg := prometheus.NewRegistry()
	rt, err := projections.NewRuntime(projections.RuntimeConfig{
		Pool: pool, Store: store, Async: []projections.Projector{healthy, poisoned}, Registerer: reg,
		PollInterval: 10 * time.Millisecond, RetryMaxInterval: 10 * time.Millisecond,
		MessageAttempts: 2, StallAfter: 300 * time.Millisecond, LagInterval: 50 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	startRuntime(t, rt)
	mustAppend(t, store, ticks("acme", "a", 2))
	mustAppend(t, store, eventstore.Commit{
		Metadata: eventstore.Metadata{CompanyID: "acme", Source: "test"},
		Streams: []eventstore.StreamAppend{{StreamID: eventstore.StreamID("tick", "acme", "boom"), ExpectedVersion: eventstore.Any,
			Events: []eventstore.Event{{Type: "Boom", Data: json.RawMessage(`{}`)}}}},
	})
	mustAppend(t, store, ticks("acme", "b", 3))
	waitCaughtUp(t, pool, healthy)
	checkCounts(t, pool, "healthy")

	// Gave up on the commit (its errors are counted), and applied nothing
	// after it, though its later commits were delivered.
	waitFor(t, 10*time.Second, "the poisoned projector's attempts", func() bool {
		return metricValue(t, reg, "clientele_projection_handler_errors_total", "poisoned") >= 2
	})
	mustAppend(t, store, ticks("acme", "c", 1))
	waitCaughtUp(t, pool, healthy)
	time.Sleep(200 * time.Millisecond)
	got := gotCounts(t, pool, "poisoned")
	if len(got) != 1 || got["tick-acme-a"].N != 2 {
		t.Fatalf("poisoned projector: %v, want only stream a, applied before the failed commit", got)
	}

	poisoned.broken.Store(false)
	waitCaughtUp(t, pool, poisoned)
	checkCounts(t, pool, "poisoned")
}

// TestPrunedOutbox: the runtime deletes the commit messages its
// projectors acked, and a projector started later, whose messages were
// pruned before it ever ran, still builds its whole read model from the
// log.
func TestPrunedOutbox(t *testing.T) {
	pool := pgtest.NewPool(t)
	createCounterTable(t, pool, "early")
	createCounterTable(t, pool, "late")
	store := postgres.New(pool, bus.CommitPublisher{})
	early := counter{"early", "early"}
	cfg := projections.RuntimeConfig{Pool: pool, Store: store, Async: []projections.Projector{early},
		PollInterval: 10 * time.Millisecond, PruneInterval: 20 * time.Millisecond}
	rt, err := projections.NewRuntime(cfg)
	if err != nil {
		t.Fatal(err)
	}
	startRuntime(t, rt)
	for _, s := range []string{"a", "b", "c"} {
		mustAppend(t, store, ticks("acme", s, 2))
	}
	waitCaughtUp(t, pool, early)
	waitFor(t, 10*time.Second, "the acked messages pruned", func() bool {
		var n int
		if err := pool.QueryRow(context.Background(), `SELECT count(*) FROM watermill_commits`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n == 0
	})
	checkCounts(t, pool, "early")

	late := counter{"late", "late"}
	cfg.Async = []projections.Projector{late}
	rt2, err := projections.NewRuntime(cfg)
	if err != nil {
		t.Fatal(err)
	}
	startRuntime(t, rt2)
	mustAppend(t, store, ticks("acme", "d", 1))
	waitCaughtUp(t, pool, late)
	checkCounts(t, pool, "late")
}
