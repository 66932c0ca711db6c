package imports_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/clientele/clientele/commands/imports"
	"github.com/clientele/clientele/domain/importing"
	"github.com/clientele/clientele/internal/pg/pgtest"
	"github.com/clientele/clientele/readmodels"
)

// TestImportChunkRedelivered checks that a chunk handled twice is applied
// once.
func TestImportChunkRedelivered(t *testing.T) {
	e := newImportEnv(t, pgtest.NewPool(t))
	run := e.stage(upload(5, nil), 10)
	h := imports.NewImportChunkHandler(e.pool, e.keys, e.importers(), readmodels.NewCompanies(e.pool, ""))
	for range 2 {
		if err := h.Handle(context.Background(), imports.ImportChunk{RunID: run, Seq: 0}); err != nil {
			t.Fatal(err)
		}
	}
	for s, n := range e.eventsPerRecord() {
		if n != 1 {
			t.Errorf("%s: %d events", s, n)
		}
	}
	if r := e.wait(run); r.Accepted != 5 {
		t.Errorf("run: %+v", r)
	}
}

// TestImportWorkersTakeTurns runs two workers on one database (serve and
// a CLI import, say): they share the consumer group, so chunks are applied
// one at a time, in upload order, each once.
func TestImportWorkersTakeTurns(t *testing.T) {
	e := newImportEnv(t, pgtest.NewPool(t))
	var inFlight, overlaps atomic.Int32
	var mu sync.Mutex // the race detector cannot see the database's locks
	var order []string
	e.imp.Before = func(_ context.Context, c imports.Chunk) error {
		if inFlight.Add(1) > 1 {
			overlaps.Add(1)
		}
		defer inFlight.Add(-1)
		mu.Lock()
		order = append(order, fmt.Sprintf("%s/%d", c.RunID, c.Seq))
		mu.Unlock()
		time.Sleep(5 * time.Millisecond) // a window for another worker to overlap, if it could
		return nil
	}
	var runs []string
	for range 3 {
		runs = append(runs, e.stage(upload(50, nil), 10))
	}
	e.startWorker()
	e.startWorker()
	for _, run := range runs {
		if r := e.wait(run); r.State != importing.Completed || r.Accepted != 50 {
			t.Errorf("run %s: %+v", run, r)
		}
	}
	if n := overlaps.Load(); n != 0 {
		t.Errorf("chunks overlapped %d times", n)
	}
	var want []string
	for _, run := range runs {
		for seq := range 5 {
			want = append(want, fmt.Sprintf("%s/%d", run, seq))
		}
	}
	if diff := cmp.Diff(want, order); diff != "" {
		t.Errorf("chunks applied out of upload order (-want +got):\n%s", diff)
	}
	for s, n := range e.eventsPerRecord() {
		if n != 3 {
			t.Errorf("%s: %d events, want 3 (one per run)", s, n)
		}
	}
}
