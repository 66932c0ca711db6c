package projections_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/clientele/clientele/eventstore"
	"github.com/clientele/clientele/eventstore/memory"
	"github.com/clientele/clientele/eventstore/postgres"
	"github.com/clientele/clientele/internal/bus"
	"github.com/clientele/clientele/internal/pg/pgtest"
	"github.com/clientele/clientele/projections"
	"github.com/clientele/clientele/projections/internal/projectiontest"
)

// failing fails to apply any commit with an event of type "Boom".
type failing struct{ counter }

func (f failing) Apply(ctx context.Context, tx pgx.Tx, events []eventstore.RecordedEvent) error {
	for _, e := range events {
		if e.Type == "Boom" {
			return projectiontest.ErrBoom
		}
	}
	return f.counter.Apply(ctx, tx, events)
}

func TestInlineHook(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	createCounterTable(t, pool, "counts")
	store := postgres.New(pool)
	p := failing{counter{"counts", "counts"}}
	rt, err := projections.NewRuntime(projections.RuntimeConfig{Pool: pool, Store: store, Inline: []projections.Projector{p}})
	if err != nil {
		t.Fatal(err)
	}
	store.AddHook(rt.InlineHook())

	t.Run("same transaction", func(t *testing.T) {
		err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			if _, err := store.AppendTx(ctx, tx, projectiontest.Ticks("acme", "a", 3)); err != nil {
				return err
			}
			var n int64
			if err := tx.QueryRow(ctx, `SELECT n FROM counts WHERE stream_id = 'tick-acme-a'`).Scan(&n); err != nil {
				return err
			}
			if n != 3 {
				t.Errorf("inside the append transaction: n = %d, want 3", n)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		checkCounts(t, pool, "counts")
	})

	t.Run("apply error aborts the append", func(t *testing.T) {
		c := projectiontest.Ticks("acme", "a", 1)
		c.Streams[0].Events[0].Type = "Boom"
		if _, err := store.Append(ctx, c); !errors.Is(err, projectiontest.ErrBoom) {
			t.Fatalf("append = %v, want %v", err, projectiontest.ErrBoom)
		}
		evs, err := store.ReadStream(ctx, "tick-acme-a", 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(evs) != 3 {
			t.Errorf("stream has %d events after the failed append, want 3", len(evs))
		}
		checkCounts(t, pool, "counts")
	})

	t.Run("status", func(t *testing.T) {
		var st []projections.ProjectionStatus
		last := projectiontest.LastPosition(t, pool)
		projectiontest.WaitFor(t, 30*time.Second, "head", func() bool {
			var err error
			if st, err = rt.Status(ctx); err != nil {
				t.Fatal(err)
			}
			return st[0].Head == last
		})
		if len(st) != 1 || st[0].Kind != projections.KindInline || st[0].Lag != 0 || st[0].EventsApplied != 3 || st[0].Checkpoint != st[0].Head {
			t.Errorf("status = %+v", st)
		}
	})
}

// TestAsyncOrdered appends from many goroutines while the projector runs:
// every event is applied once, each stream in order.
func TestAsyncOrdered(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	createCounterTable(t, pool, "counts")
	store := postgres.New(pool, projections.CommitPublisher{})
	p := counter{"counts", "counts"}
	reg := prometheus.NewRegistry()
	rt, err := projections.NewRuntime(projections.RuntimeConfig{
		Pool: pool, Store: store, Async: []projections.Projector{p},
		Registerer: reg, ConsumerSettings: bus.ConsumerSettings{PollInterval: 10 * time.Millisecond}, LagInterval: 50 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	projectiontest.StartRuntime(t, rt)

	const writers, commits = 6, 25
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			company := fmt.Sprintf("c%d", w%3)
			for range commits {
				if _, err := store.Append(ctx, projectiontest.Ticks(company, fmt.Sprint(w), 1+rand.IntN(5))); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	projectiontest.WaitCaughtUp(t, pool, p)
	checkCounts(t, pool, "counts")

	st, err := rt.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	for _, c := range wantCounts(t, pool) {
		total += c.N
	}
	if st[0].Lag != 0 || st[0].EventsApplied != total || st[0].UpdatedAt.IsZero() {
		t.Errorf("status = %+v, want no lag and %d events applied", st[0], total)
	}
	if got := metricValue(t, reg, "clientele_projection_events_applied_total", "counts"); got != float64(total) {
		t.Errorf("events applied metric = %v, want %d", got, total)
	}
	projectiontest.WaitFor(t, 5*time.Second, "lag gauge at 0", func() bool {
		return metricValue(t, reg, "clientele_projection_lag_events", "counts") == 0
	})
}

// TestRedelivery delivers commits again: they are skipped.
func TestRedelivery(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	createCounterTable(t, pool, "counts")
	store := postgres.New(pool, projections.CommitPublisher{})
	p := counter{"counts", "counts"}
	reg := prometheus.NewRegistry()
	rt, err := projections.NewRuntime(projections.RuntimeConfig{
		Pool: pool, Store: store, Async: []projections.Projector{p}, Registerer: reg, ConsumerSettings: bus.ConsumerSettings{PollInterval: 10 * time.Millisecond},
	})
	if err != nil {
		t.Fatal(err)
	}
	var committed []eventstore.Committed
	for i := range 5 {
		committed = append(committed, projectiontest.MustAppend(t, store, projectiontest.Ticks("acme", "a", i+1)))
	}
	projectiontest.StartRuntime(t, rt)
	projectiontest.WaitCaughtUp(t, pool, p)

	// Publish the first three commits twice more; they come before the
	// last commit, so once that one is applied they were all handled.
	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		pub, err := bus.OutboxPublisher(tx, nil)
		if err != nil {
			return err
		}
		for range 2 {
			for _, c := range committed[:3] {
				msg, err := bus.NewCommitMessage(ctx, projections.HeaderOf(c))
				if err != nil {
					return err
				}
				if err := pub.Publish(bus.CommitsTopic, msg); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	projectiontest.MustAppend(t, store, projectiontest.Ticks("acme", "a", 1))
	projectiontest.WaitCaughtUp(t, pool, p)
	checkCounts(t, pool, "counts")
	if got := metricValue(t, reg, "clientele_projection_commits_skipped_total", "counts"); got != 6 {
		t.Errorf("skipped = %v, want 6", got)
	}
}

// TestRetry makes a commit fail a few times: it is retried, not skipped,
// and the commits after it wait for it.
func TestRetry(t *testing.T) {
	pool := pgtest.NewPool(t)
	createCounterTable(t, pool, "counts")
	store := postgres.New(pool, projections.CommitPublisher{})
	p := &flaky{counter: counter{"counts", "counts"}, failures: 3}
	reg := prometheus.NewRegistry()
	rt, err := projections.NewRuntime(projections.RuntimeConfig{
		Pool: pool, Store: store, Async: []projections.Projector{p}, Registerer: reg,
		ConsumerSettings: bus.ConsumerSettings{PollInterval: 10 * time.Millisecond, RetryMaxInterval: 50 * time.Millisecond},
	})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		projectiontest.MustAppend(t, store, projectiontest.Ticks("acme", "a", i+1))
	}
	projectiontest.StartRuntime(t, rt)
	projectiontest.WaitCaughtUp(t, pool, p)
	checkCounts(t, pool, "counts")
	if got := metricValue(t, reg, "clientele_projection_handler_errors_total", "counts"); got != 3 {
		t.Errorf("handler errors = %v, want 3", got)
	}
}

// flaky fails its first applies, the last of them with a panic.
type flaky struct {
	counter
	mu       sync.Mutex
	failures int
}

func (f *flaky) Apply(ctx context.Context, tx pgx.Tx, events []eventstore.RecordedEvent) error {
	f.mu.Lock()
	f.failures--
	left := f.failures
	f.mu.Unlock()
	switch {
	case left == 0:
		panic("flaky")
	case left > 0:
		return projectiontest.ErrBoom
	}
	return f.counter.Apply(ctx, tx, events)
}

func TestNoAsyncProjectors(t *testing.T) {
	pool := pgtest.NewPool(t)
	rt, err := projections.NewRuntime(projections.RuntimeConfig{Pool: pool, Store: postgres.New(pool)})
	if err != nil {
		t.Fatal(err)
	}
	projectiontest.StartRuntime(t, rt)
}

func TestRuntimeConfigValidate(t *testing.T) {
	p := counter{"counts", "counts"}
	_, err := projections.NewRuntime(projections.RuntimeConfig{
		Inline:           []projections.Projector{p, nil},
		Async:            []projections.Projector{p, counter{}},
		ConsumerSettings: bus.ConsumerSettings{PollInterval: -time.Second},
	})
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{"Pool", "Store", "PollInterval", "inline projector 1 is nil", `"counts" is used twice`, "async projector 1 has no name"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
}

// TestRuntimeLogOfStore: a runtime given no log reads the one its store
// offers, and refuses a store that offers none.
func TestRuntimeLogOfStore(t *testing.T) {
	pool := pgtest.NewPool(t)
	store := postgres.New(pool)
	if got := eventstore.LogOf(store); got != (postgres.EventLog{}) {
		t.Errorf("LogOf(postgres store) = %#v, want postgres.EventLog{}", got)
	}
	if err := (&projections.RuntimeConfig{Pool: pool, Store: store}).Validate(); err != nil {
		t.Errorf("Validate of a runtime on the PostgreSQL store with no log: %v", err)
	}
	err := (&projections.RuntimeConfig{Pool: pool, Store: memory.New()}).Validate()
	if err == nil || !strings.Contains(err.Error(), "no log") {
		t.Errorf("Validate of a runtime on a store that offers no log: %v, want a no log error", err)
	}
	if _, err := projections.Status(t.Context(), pool, memory.New(), nil, nil, nil); err == nil || !strings.Contains(err.Error(), "no log") {
		t.Errorf("Status on a store that offers no log: %v, want a no log error", err)
	}
}

func TestRate(t *testing.T) {
	t0 := time.Now()
	a := projections.ProjectionStatus{EventsApplied: 100, SampledAt: t0}
	for name, tc := range map[string]struct {
		b    projections.ProjectionStatus
		want float64
	}{
		"steady":       {projections.ProjectionStatus{EventsApplied: 300, SampledAt: t0.Add(2 * time.Second)}, 100},
		"simultaneous": {projections.ProjectionStatus{EventsApplied: 300, SampledAt: t0}, 0},
		"rebuilt":      {projections.ProjectionStatus{EventsApplied: 10, SampledAt: t0.Add(time.Second)}, 0},
	} {
		if got := projections.Rate(a, tc.b); got != tc.want {
			t.Errorf("%s: Rate = %v, want %v", name, got, tc.want)
		}
	}
}
