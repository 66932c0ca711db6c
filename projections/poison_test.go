package projections_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/clientele/clientele/eventstore"
	"github.com/clientele/clientele/eventstore/postgres"
	"github.com/clientele/clientele/internal/bus"
	"github.com/clientele/clientele/internal/pg/pgtest"
	"github.com/clientele/clientele/projections"
	"github.com/clientele/clientele/projections/internal/projectiontest"
)

// breakable fails every commit holding a "Boom" event while broken: with
// errBoom, with a panic while it panics, with a transient error (a
// serialization failure, as an outage gives) while it is flaky, or with
// an undefined column (as an older binary meets after a migration) while
// it is stale.
type breakable struct {
	counter
	broken, panics, flaky, stale atomic.Bool
}

func (b *breakable) Apply(ctx context.Context, tx pgx.Tx, events []eventstore.RecordedEvent) error {
	for _, e := range events {
		if e.Type == "Boom" && b.broken.Load() {
			switch {
			case b.panics.Load():
				panic("boom")
			case b.flaky.Load():
				return &pgconn.PgError{Code: "40001", Message: "could not serialize access"}
			case b.stale.Load():
				return &pgconn.PgError{Code: "42703", Message: `column "old_name" does not exist`}
			}
			return projectiontest.ErrBoom
		}
	}
	return b.counter.Apply(ctx, tx, events)
}

// poisonRuntime runs projectors with short intervals; stallAfter is when
// a parked company is first retried.
func poisonRuntime(t *testing.T, pool *pgxpool.Pool, store *postgres.Store, reg prometheus.Registerer, stallAfter time.Duration, async ...projections.Projector) *projections.Runtime {
	t.Helper()
	rt, err := projections.NewRuntime(projections.RuntimeConfig{
		Pool: pool, Store: store, Async: async, Registerer: reg,
		ConsumerSettings: bus.ConsumerSettings{
			PollInterval: 10 * time.Millisecond, RetryMaxInterval: 10 * time.Millisecond,
			MessageAttempts: 2, StallAfter: stallAfter,
		},
		StallRetryMax: stallAfter, LagInterval: 50 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	projectiontest.StartRuntime(t, rt)
	return rt
}

// countsOf is the part of a counter table (or of what it must hold) that
// is of company's streams.
func countsOf(all map[string]count, company string) map[string]count {
	out := map[string]count{}
	for s, c := range all {
		if strings.HasPrefix(s, "tick-"+company+"-") {
			out[s] = c
		}
	}
	return out
}

// TestPoisonCommitStopsOnlyItsCompany: a commit that one projector
// cannot apply stops that projector for that commit's company alone. The
// other projectors, and the other companies' commits, go on (a delivery
// that keeps failing gives up instead of holding its transaction, which
// would hold back every log reader of the server, and the catch-up loop
// then parks the company); the company's later commits are held, and
// once the commit can be applied (here: the projector is fixed; in
// production: a fix is deployed) the company resumes by itself, its
// commits applied in order, and the projector ends exactly as if nothing
// had happened.
func TestPoisonCommitStopsOnlyItsCompany(t *testing.T) {
	pool := pgtest.NewPool(t)
	createCounterTable(t, pool, "healthy")
	createCounterTable(t, pool, "poisoned")
	store := postgres.New(pool, projections.CommitPublisher{})
	healthy := counter{"healthy", "healthy"}
	poisoned := &breakable{counter: counter{"poisoned", "poisoned"}}
	poisoned.broken.Store(true)
	reg := prometheus.NewRegistry()
	rt := poisonRuntime(t, pool, store, reg, 300*time.Millisecond, healthy, poisoned)
	projectiontest.MustAppend(t, store, projectiontest.Ticks("acme", "a", 2))
	bad := projectiontest.MustAppend(t, store, projectiontest.Boom("acme", "boom"))
	projectiontest.MustAppend(t, store, projectiontest.Ticks("acme", "b", 3))
	projectiontest.MustAppend(t, store, projectiontest.Ticks("globex", "g", 2))
	projectiontest.WaitCaughtUp(t, pool, healthy)
	checkCounts(t, pool, "healthy")

	// The poisoned projector parks acme at the failed commit, and goes on
	// with globex; acme's later commits, delivered, wait.
	projectiontest.WaitCaughtUp(t, pool, poisoned)
	projectiontest.MustAppend(t, store, projectiontest.Ticks("globex", "h", 1))
	last := projectiontest.MustAppend(t, store, projectiontest.Ticks("acme", "c", 1))
	projectiontest.WaitCaughtUp(t, pool, poisoned)
	want := wantCounts(t, pool)
	got := gotCounts(t, pool, "poisoned")
	if diff := cmp.Diff(countsOf(want, "globex"), countsOf(got, "globex")); diff != "" {
		t.Errorf("globex (-want +got):\n%s", diff)
	}
	if acme := countsOf(got, "acme"); len(acme) != 1 || acme["tick-acme-a"].N != 2 {
		t.Errorf("acme: %v, want only stream a, applied before the failed commit", acme)
	}
	s := projectiontest.Stalls(t, rt)
	if len(s) != 1 || s[0].Projection != "poisoned" || s[0].CompanyID != "acme" || s[0].Commit != bad.First ||
		s[0].HeldUntil != last.Last || !strings.Contains(s[0].Error, "boom") || s[0].Attempts < 2 {
		t.Fatalf("stalls %+v, want acme parked at %v holding up to %v", s, bad.First, last.Last)
	}
	if got := metricValue(t, reg, "clientele_projection_stalled_companies", "poisoned"); got != 1 {
		t.Errorf("stalled companies gauge = %v, want 1", got)
	}
	if got := metricValue(t, reg, "clientele_projection_stalled_companies", "healthy"); got != 0 {
		t.Errorf("stalled companies gauge of the healthy projector = %v, want 0", got)
	}

	// A retry while it still fails records it and applies nothing.
	if n, err := rt.RetryStall(context.Background(), "poisoned", "acme"); !errors.Is(err, projectiontest.ErrBoom) || n != 0 {
		t.Fatalf("RetryStall = %d, %v; want 0 and the failure", n, err)
	}
	if again := projectiontest.Stalls(t, rt); len(again) != 1 || again[0].Attempts <= s[0].Attempts {
		t.Errorf("after a failed retry: %+v, want one more attempt than %d", again, s[0].Attempts)
	}

	poisoned.broken.Store(false)
	projectiontest.WaitFor(t, 10*time.Second, "acme resumed by itself", func() bool { return len(projectiontest.Stalls(t, rt)) == 0 })
	checkCounts(t, pool, "poisoned")
	projectiontest.WaitFor(t, 10*time.Second, "the stalled companies gauge back to 0", func() bool {
		return metricValue(t, reg, "clientele_projection_stalled_companies", "poisoned") == 0
	})
	// Resumed, acme's commits are applied as they come again.
	projectiontest.MustAppend(t, store, projectiontest.Ticks("acme", "d", 2))
	projectiontest.WaitCaughtUp(t, pool, poisoned)
	checkCounts(t, pool, "poisoned")
}

// TestPanicParksItsCompany: a projector that panics on a commit parks
// its company (a panic comes back as surely as an error), in the delivery
// and in the catch-up loop alike, and the process goes on.
func TestPanicParksItsCompany(t *testing.T) {
	pool := pgtest.NewPool(t)
	createCounterTable(t, pool, "poisoned")
	store := postgres.New(pool, projections.CommitPublisher{})
	poisoned := &breakable{counter: counter{"poisoned", "poisoned"}}
	poisoned.broken.Store(true)
	poisoned.panics.Store(true)
	rt := poisonRuntime(t, pool, store, nil, time.Hour, poisoned)
	bad := projectiontest.MustAppend(t, store, projectiontest.Boom("acme", "boom"))
	projectiontest.MustAppend(t, store, projectiontest.Ticks("globex", "g", 2))
	projectiontest.WaitCaughtUp(t, pool, poisoned)
	if s := projectiontest.Stalls(t, rt); len(s) != 1 || s[0].Commit != bad.First || !strings.Contains(s[0].Error, "panic: boom") {
		t.Fatalf("stalls %+v, want acme parked at %v by the panic", s, bad.First)
	}
	if got := countsOf(gotCounts(t, pool, "poisoned"), "globex"); got["tick-globex-g"].N != 2 {
		t.Errorf("globex: %v", got)
	}
	// The operator's retry recovers a panic too.
	if _, err := rt.RetryStall(context.Background(), "poisoned", "acme"); err == nil || !strings.Contains(err.Error(), "panic: boom") {
		t.Fatalf("RetryStall = %v, want the panic", err)
	}
	poisoned.broken.Store(false)
	if n, err := rt.RetryStall(context.Background(), "poisoned", "acme"); err != nil || n != 1 {
		t.Fatalf("RetryStall = %d, %v; want 1 commit applied", n, err)
	}
	checkCounts(t, pool, "poisoned")
}

// TestFailuresOfNoCommitParkNothing: a commit that fails for a reason
// that is not the commit's stops the whole projector there, as before,
// and parks no company:
//   - a transient failure (a serialization failure, a lost connection):
//     the same commit would apply a moment later, and parking would only
//     reorder the companies' commits for nothing;
//   - a schema mismatch (an older binary, during a rolling deploy, after a
//     migration renamed a column it names): every commit of every company
//     would fail so, and parking them all would set every company aside.
//
// The projector goes on once the statement works again.
func TestFailuresOfNoCommitParkNothing(t *testing.T) {
	for _, tc := range []struct {
		name  string
		cause func(*breakable)
	}{
		{"transient", func(b *breakable) { b.flaky.Store(true) }},
		{"schema mismatch", func(b *breakable) { b.stale.Store(true) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pool := pgtest.NewPool(t)
			createCounterTable(t, pool, "poisoned")
			store := postgres.New(pool, projections.CommitPublisher{})
			poisoned := &breakable{counter: counter{"poisoned", "poisoned"}}
			poisoned.broken.Store(true)
			tc.cause(poisoned)
			reg := prometheus.NewRegistry()
			rt := poisonRuntime(t, pool, store, reg, 100*time.Millisecond, poisoned)
			projectiontest.MustAppend(t, store, projectiontest.Ticks("acme", "a", 1))
			projectiontest.MustAppend(t, store, projectiontest.Boom("acme", "boom"))
			projectiontest.MustAppend(t, store, projectiontest.Ticks("globex", "g", 2))
			// Many more failed attempts than it takes to park a company.
			projectiontest.WaitFor(t, 30*time.Second, "the projector's attempts", func() bool {
				return metricValue(t, reg, "clientele_projection_handler_errors_total", "poisoned") >= 10
			})
			if s := projectiontest.Stalls(t, rt); len(s) != 0 {
				t.Fatalf("stalls %+v, want none", s)
			}
			if got := gotCounts(t, pool, "poisoned"); len(got) != 1 {
				t.Errorf("poisoned: %v, want only acme's stream a: the projector stops as a whole at the failed commit", got)
			}
			poisoned.broken.Store(false)
			projectiontest.WaitCaughtUp(t, pool, poisoned)
			checkCounts(t, pool, "poisoned")
			if s := projectiontest.Stalls(t, rt); len(s) != 0 {
				t.Fatalf("stalls %+v after the projector went on, want none", s)
			}
		})
	}
}

// TestResumeRacesTheLiveHandler: a parked company resumed while its new
// commits keep arriving, and while other processes retry it too, has
// every commit applied exactly once and in order (the counter counts any
// event applied twice, and any out of its stream's order, in
// "disorder").
func TestResumeRacesTheLiveHandler(t *testing.T) {
	pool := pgtest.NewPool(t)
	createCounterTable(t, pool, "poisoned")
	store := postgres.New(pool, projections.CommitPublisher{})
	poisoned := &breakable{counter: counter{"poisoned", "poisoned"}}
	poisoned.broken.Store(true)
	rt := poisonRuntime(t, pool, store, nil, time.Hour, poisoned)
	projectiontest.MustAppend(t, store, projectiontest.Ticks("acme", "a", 1))
	bad := projectiontest.MustAppend(t, store, projectiontest.Boom("acme", "boom"))
	projectiontest.WaitFor(t, 10*time.Second, "acme parked", func() bool { return len(projectiontest.Stalls(t, rt)) == 1 })
	for i := range 20 {
		projectiontest.MustAppend(t, store, projectiontest.Ticks("acme", "a", 1+i%3))
		projectiontest.MustAppend(t, store, projectiontest.Ticks("globex", "g", 1))
	}

	poisoned.broken.Store(false)
	// Appends of both companies go on while three "processes" (the
	// runtime itself shares the lock the same way) retry acme at once.
	stop := make(chan struct{})
	var appends sync.WaitGroup
	appends.Add(1)
	go func() {
		defer appends.Done()
		for i := 0; i < 200; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := store.Append(context.Background(), projectiontest.Ticks([]string{"acme", "globex"}[i%2], "b", 1+i%2)); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	var retries sync.WaitGroup
	for range 3 {
		retries.Add(1)
		go func() {
			defer retries.Done()
			if _, err := rt.RetryStall(context.Background(), "poisoned", "acme"); err != nil {
				t.Error(err)
			}
		}()
	}
	retries.Wait()
	close(stop)
	appends.Wait()
	if s := projectiontest.Stalls(t, rt); len(s) != 0 {
		t.Fatalf("stalls %+v after the retries, want none", s)
	}
	projectiontest.WaitCaughtUp(t, pool, poisoned)
	checkCounts(t, pool, "poisoned")
	if got := gotCounts(t, pool, "poisoned")["tick-acme-boom"]; got.N != 1 {
		t.Errorf("the stalled commit: %+v, applied %d times, want 1 (at %v)", got, got.N, bad.First)
	}
}

// TestPrunedOutbox: the runtime deletes the commit messages its
// projectors acked, and a projector started later, whose messages were
// pruned before it ever ran, still builds its whole read model from the
// log.
func TestPrunedOutbox(t *testing.T) {
	pool := pgtest.NewPool(t)
	createCounterTable(t, pool, "early")
	createCounterTable(t, pool, "late")
	store := postgres.New(pool, projections.CommitPublisher{})
	early := counter{"early", "early"}
	cfg := projections.RuntimeConfig{Pool: pool, Store: store, Async: []projections.Projector{early},
		ConsumerSettings: bus.ConsumerSettings{PollInterval: 10 * time.Millisecond}, PruneInterval: 20 * time.Millisecond}
	rt, err := projections.NewRuntime(cfg)
	if err != nil {
		t.Fatal(err)
	}
	projectiontest.StartRuntime(t, rt)
	for _, s := range []string{"a", "b", "c"} {
		projectiontest.MustAppend(t, store, projectiontest.Ticks("acme", s, 2))
	}
	projectiontest.WaitCaughtUp(t, pool, early)
	projectiontest.WaitFor(t, 10*time.Second, "the acked messages pruned", func() bool {
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
	projectiontest.StartRuntime(t, rt2)
	projectiontest.MustAppend(t, store, projectiontest.Ticks("acme", "d", 1))
	projectiontest.WaitCaughtUp(t, pool, late)
	checkCounts(t, pool, "late")
}
