package imports_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/clientele/clientele/commands/imports"
	"github.com/clientele/clientele/internal/bus"
	"github.com/clientele/clientele/internal/natstest"
	"github.com/clientele/clientele/internal/pg/pgtest"
)

// TestImportWorkerOverNATSLostChunkMessages: over NATS a chunk message
// can be lost after the relay pruned its outbox row (the stream's
// MaxAge, a purge), which the PostgreSQL transport never does (its
// outbox keeps a message until the worker acked it). The chunks are
// still applied: the staged chunks, not the messages, are the work, and
// the worker applies the pending chunks of an import that stood still
// for StallAfter.
func TestImportWorkerOverNATSLostChunkMessages(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	e := newImportEnv(t, pool)
	srv := natstest.New(t)
	tr, err := bus.NewNATS(pool, bus.NATSConfig{URL: srv.URL(), RetryInterval: 100 * time.Millisecond,
		Relay: bus.PostgresConfig{PollInterval: 10 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tr.Close() })
	// Another group's subscription starts the relay before the worker's
	// consumer exists.
	probe, err := tr.Subscriber("probe")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() {
		cancel()
		probe.Close()
	})
	if _, err := probe.Subscribe(ctx, imports.ChunksTopic); err != nil {
		t.Fatal(err)
	}
	run := e.stage(upload(50, nil), 10)

	js := natstest.JetStream(t, srv.URL())
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
		info, err := js.StreamInfo(imports.ChunksTopic)
		if err == nil && info.State.Msgs == 5 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the relay did not forward the 5 chunk messages: %+v, %v", info, err)
		}
	}
	if err := js.PurgeStream(imports.ChunksTopic); err != nil {
		t.Fatal(err)
	}
	// AfterChunk is called for the chunks applied on their message.
	var delivered atomic.Int64
	e.startWorker(func(c *imports.ImportWorkerConfig) {
		c.Transport = tr
		c.StallAfter = 300 * time.Millisecond
		c.AfterChunk = func(string, int) { delivered.Add(1) }
	})
	if r := e.wait(run); r.Accepted != 50 || r.Rejected != 0 {
		t.Errorf("run %+v, want 50 accepted", r)
	}
	if n := delivered.Load(); n != 0 {
		t.Errorf("%d chunks came by message after the purge", n)
	}
}
