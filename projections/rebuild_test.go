package projections_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/clientele/clientele/eventstore/postgres"
	"github.com/clientele/clientele/internal/bus"
	"github.com/clientele/clientele/internal/pg/pgtest"
	"github.com/clientele/clientele/projections"
	"github.com/clientele/clientele/projections/internal/projectiontest"
	"github.com/clientele/clientele/projections/projectors"
)

// fill appends about n events in commits of up to 900 to a few streams.
func fill(t testing.TB, store *postgres.Store, n int) {
	t.Helper()
	for i := 0; n > 0; i++ {
		k := min(n, 900-i%7*50)
		projectiontest.MustAppend(t, store, projectiontest.Ticks(fmt.Sprintf("c%d", i%2), fmt.Sprint(i%3), k))
		n -= k
	}
}

// progressLog records the progress reports of a rebuild.
type progressLog struct {
	mu          sync.Mutex
	calls       int
	done, total int64
	err         error
}

func (l *progressLog) report(done, total int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if done < l.done || done > total {
		l.err = fmt.Errorf("progress %d/%d after %d/%d", done, total, l.done, l.total)
	}
	l.calls++
	l.done, l.total = done, total
}

func TestRebuildAsync(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	createCounterTable(t, pool, "counts")
	store := postgres.New(pool, projections.CommitPublisher{})
	p := counter{"counts", "counts"}
	rt, err := projections.NewRuntime(projections.RuntimeConfig{
		Pool: pool, Store: store, Async: []projections.Projector{p}, ConsumerSettings: bus.ConsumerSettings{PollInterval: 10 * time.Millisecond},
	})
	if err != nil {
		t.Fatal(err)
	}
	fill(t, store, 25_000) // more than two pages
	projectiontest.StartRuntime(t, rt)
	projectiontest.WaitCaughtUp(t, pool, p)

	if _, err := pool.Exec(ctx, `DELETE FROM counts WHERE stream_id LIKE '%-0'; UPDATE counts SET n = n + 1000`); err != nil {
		t.Fatal(err)
	}
	var progress progressLog
	if err := rt.Rebuild(ctx, "counts", progress.report); err != nil {
		t.Fatal(err)
	}
	// The rebuild stops where readers see the log up to (see Head); the
	// handler brings the rest, if any.
	if progress.err != nil || progress.calls < 3 || progress.done < 20_000 || progress.done != progress.total {
		t.Errorf("progress: %d calls, last %d/%d, %v", progress.calls, progress.done, progress.total, progress.err)
	}
	projectiontest.WaitCaughtUp(t, pool, p)
	checkCounts(t, pool, "counts")
	st, err := rt.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st[0].EventsApplied != 25_000 {
		t.Errorf("status after rebuild: %+v, want 25000 events applied", st[0])
	}
	checkNoScratch(t, pool)

	// The handler goes on from the rebuilt checkpoint into the new table.
	fill(t, store, 100)
	projectiontest.WaitCaughtUp(t, pool, p)
	checkCounts(t, pool, "counts")
}

// TestRebuildUnderLoad rebuilds an inline and an async projection while
// appends keep coming: neither loses nor repeats an event.
func TestRebuildUnderLoad(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	createCounterTable(t, pool, "inline_counts")
	createCounterTable(t, pool, "async_counts")
	store := postgres.New(pool)
	inline, async := counter{"inline_counts", "inline_counts"}, counter{"async_counts", "async_counts"}
	rt, err := projections.NewRuntime(projections.RuntimeConfig{
		Pool: pool, Store: store, ConsumerSettings: bus.ConsumerSettings{PollInterval: 10 * time.Millisecond},
		Inline: []projections.Projector{inline}, Async: []projections.Projector{async},
	})
	if err != nil {
		t.Fatal(err)
	}
	store.AddHook(rt.InlineHook())
	store.AddHook(projections.CommitPublisher{})
	fill(t, store, 15_000)
	projectiontest.StartRuntime(t, rt)

	stop := make(chan struct{})
	var appended atomic.Int64
	var wg sync.WaitGroup
	for w := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				c, err := store.Append(ctx, projectiontest.Ticks("load", fmt.Sprint(w), 1+i%20))
				if err != nil {
					t.Error(err)
					return
				}
				appended.Add(int64(len(c.Events)))
			}
		}()
	}
	var rebuilds sync.WaitGroup
	for _, name := range []string{"inline_counts", "async_counts"} {
		rebuilds.Add(1)
		go func() {
			defer rebuilds.Done()
			if err := rt.Rebuild(ctx, name, nil); err != nil {
				t.Errorf("rebuild %s: %v", name, err)
			}
		}()
	}
	rebuilds.Wait()
	before := appended.Load()
	projectiontest.WaitFor(t, 10*time.Second, "appends after the rebuilds", func() bool { return appended.Load() > before+100 })
	close(stop)
	wg.Wait()
	if before == 0 {
		t.Error("no append ran during the rebuilds")
	}
	projectiontest.WaitCaughtUp(t, pool, async)
	checkCounts(t, pool, "inline_counts")
	checkCounts(t, pool, "async_counts")
	checkNoScratch(t, pool)
}

func TestRebuildFailureKeepsOldTables(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	createCounterTable(t, pool, "counts")
	store := postgres.New(pool)
	p := counter{"counts", "counts"}
	rt, err := projections.NewRuntime(projections.RuntimeConfig{Pool: pool, Store: store, Inline: []projections.Projector{p}})
	if err != nil {
		t.Fatal(err)
	}
	store.AddHook(rt.InlineHook())
	projectiontest.MustAppend(t, store, projectiontest.Ticks("acme", "a", 2))
	c := projectiontest.Ticks("acme", "a", 1)
	c.Streams[0].Events[0].Type = "Boom"
	projectiontest.MustAppend(t, store, c)

	err = projections.Rebuild(ctx, pool, store, postgres.EventLog{}, failing{p}, projections.KindInline, nil)
	if !errors.Is(err, projectiontest.ErrBoom) {
		t.Fatalf("rebuild = %v, want %v", err, projectiontest.ErrBoom)
	}
	checkCounts(t, pool, "counts")
	checkNoScratch(t, pool)
}

func TestRebuildOneAtATime(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	createCounterTable(t, pool, "counts")
	store := postgres.New(pool)
	p := counter{"counts", "counts"}
	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	// What a running rebuild holds.
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock($1, hashtext('counts'))`, 0x52424c44); err != nil {
		t.Fatal(err)
	}
	err = projections.Rebuild(ctx, pool, store, postgres.EventLog{}, p, projections.KindAsync, nil)
	if !errors.Is(err, projections.ErrRebuildRunning) {
		t.Errorf("rebuild = %v, want %v", err, projections.ErrRebuildRunning)
	}
	rt, err := projections.NewRuntime(projections.RuntimeConfig{Pool: pool, Store: store})
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.Rebuild(ctx, "nope", nil); !errors.Is(err, projections.ErrUnknownProjection) {
		t.Errorf("rebuild of an unknown projection = %v", err)
	}
}

func checkNoScratch(t testing.TB, pool *pgxpool.Pool) {
	t.Helper()
	var schemas []string
	rows, err := pool.Query(context.Background(), `SELECT nspname FROM pg_namespace WHERE nspname LIKE 'rebuild\_%'`)
	if err != nil {
		t.Fatal(err)
	}
	schemas, err = pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	if len(schemas) > 0 {
		t.Errorf("scratch schemas left: %v", schemas)
	}
}

// TestRebuildInlineReadModels checks that the tables of the real inline
// projectors survive the copy and the swap of a rebuild.
func TestRebuildInlineReadModels(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	store := postgres.New(pool)
	rt, err := projections.NewRuntime(projections.RuntimeConfig{Pool: pool, Store: store, Inline: projectors.Inline()})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range projectors.Inline() {
		if err := rt.Rebuild(ctx, p.Name(), nil); err != nil {
			t.Error(err)
		}
	}
	checkNoScratch(t, pool)
}

// TestRebuildRetriesSwap holds a reader on the old table past the swap's
// lock timeout: the rebuild tries again and succeeds once it is gone.
func TestRebuildRetriesSwap(t *testing.T) {
	defer projections.SetFinishLockTimeout(100 * time.Millisecond)()
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	createCounterTable(t, pool, "counts")
	store := postgres.New(pool)
	p := counter{"counts", "counts"}
	rt, err := projections.NewRuntime(projections.RuntimeConfig{Pool: pool, Store: store, Inline: []projections.Projector{p}})
	if err != nil {
		t.Fatal(err)
	}
	store.AddHook(rt.InlineHook())
	fill(t, store, 1000)

	read := func() pgx.Tx {
		reader, err := pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := reader.Exec(ctx, `SELECT count(*) FROM counts`); err != nil {
			t.Fatal(err)
		}
		return reader
	}

	// A reader that stays makes every attempt time out.
	reader := read()
	err = rt.Rebuild(ctx, "counts", nil)
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "55P03" {
		t.Errorf("rebuild with a reader in the way = %v, want a lock timeout", err)
	}
	_ = reader.Rollback(ctx)
	checkCounts(t, pool, "counts")
	checkNoScratch(t, pool)

	// A reader that leaves after two timeouts lets the third attempt
	// through.
	reader = read()
	released := time.AfterFunc(250*time.Millisecond, func() { _ = reader.Rollback(ctx) })
	defer released.Stop()
	if err := rt.Rebuild(ctx, "counts", nil); err != nil {
		t.Fatal(err)
	}
	checkCounts(t, pool, "counts")
	checkNoScratch(t, pool)
}
