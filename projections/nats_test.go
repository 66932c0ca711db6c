package projections_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/clientele/clientele/eventstore/postgres"
	"github.com/clientele/clientele/internal/bus"
	"github.com/clientele/clientele/internal/natstest"
	"github.com/clientele/clientele/internal/pg/pgtest"
	"github.com/clientele/clientele/projections"
	"github.com/clientele/clientele/projections/internal/projectiontest"
)

// TestAsyncOverNATS runs one async projector on two runtimes (two nodes)
// over NATS JetStream while commits are appended, and purges the commits
// stream halfway, losing every message in it: the projector still
// applies every event once, each stream in order. The messages only
// announce; the log is the source of truth.
func TestAsyncOverNATS(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	srv := natstest.New(t)
	createCounterTable(t, pool, "counts")
	store := postgres.New(pool, projections.CommitPublisher{})
	p := counter{"counts", "counts"}
	for range 2 {
		tr, err := bus.NewNATS(pool, bus.NATSConfig{URL: srv.URL(), RetryInterval: 100 * time.Millisecond,
			Relay: bus.PostgresConfig{PollInterval: 10 * time.Millisecond}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { tr.Close() })
		rt, err := projections.NewRuntime(projections.RuntimeConfig{
			Pool: pool, Store: store, Async: []projections.Projector{p}, Transport: tr,
			LagInterval: 50 * time.Millisecond, ConsumerSettings: bus.ConsumerSettings{StallAfter: 500 * time.Millisecond},
		})
		if err != nil {
			t.Fatal(err)
		}
		projectiontest.StartRuntime(t, rt)
	}

	appendRound := func(round int) {
		var wg sync.WaitGroup
		for w := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range 10 {
					if _, err := store.Append(ctx, projectiontest.Ticks(fmt.Sprintf("c%d", w%2), fmt.Sprint(round, w), 1+i%3)); err != nil {
						t.Error(err)
						return
					}
				}
			}()
		}
		wg.Wait()
	}
	appendRound(0)
	js := natstest.JetStream(t, srv.URL())
	projectiontest.WaitFor(t, 10*time.Second, "the commits stream", func() bool {
		_, err := js.StreamInfo(bus.CommitsTopic)
		return err == nil
	})
	if err := js.PurgeStream(bus.CommitsTopic); err != nil {
		t.Fatal(err)
	}
	appendRound(1)
	if err := js.PurgeStream(bus.CommitsTopic); err != nil {
		t.Fatal(err)
	}
	projectiontest.WaitCaughtUp(t, pool, p)
	checkCounts(t, pool, "counts")
}
