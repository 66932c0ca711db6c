package commands_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/clientele/clientele/commands"
	"github.com/clientele/clientele/domain/importing"
	"github.com/clientele/clientele/internal/ingest"
	"github.com/clientele/clientele/internal/ingest/testimporter"
	"github.com/clientele/clientele/internal/pg"
	"github.com/clientele/clientele/internal/pg/pgtest"
	"github.com/clientele/clientele/readmodels"
)

// refused is the reason of a record whose number jsonb cannot hold.
const refused = "the database refused the record: value overflows numeric format"

// rejections returns the run's rejections.
func (e *importEnv) rejections(run string) []importing.Rejection {
	e.t.Helper()
	rs, _, err := e.runs.Rejections(context.Background(), run, "", 100)
	if err != nil {
		e.t.Fatal(err)
	}
	return rs
}

// failuresOf returns the recorded failures of a chunk and the last one's
// reason.
func (e *importEnv) failuresOf(run string, seq int) (int, string) {
	e.t.Helper()
	var n int
	var last *string
	if err := e.pool.QueryRow(context.Background(), `SELECT failures, last_failure FROM import_chunks WHERE run_id = $1 AND seq = $2`,
		run, seq).Scan(&n, &last); err != nil {
		e.t.Fatal(err)
	}
	if last == nil {
		return n, ""
	}
	return n, *last
}

// TestImportChunkIsolatesRecordsTheStoreRefuses: a chunk failing because
// of records the store refuses (a number jsonb cannot hold) or that make
// the Importer panic fails twice, then at its third attempt those records
// are rejected, with the store's reason and without their values, and the
// others are applied in order in the chunk's one commit: the later record
// of a stream still wins.
func TestImportChunkIsolatesRecordsTheStoreRefuses(t *testing.T) {
	ctx := context.Background()
	e := newImportEnv(t, pgtest.NewPool(t))
	run := e.stage(strings.NewReader(`[
		{"id": "r0"}, {"id": "r1"}, {"id": "x", "v": "first"},
		{"id": "r3", "n": 1e-16384},
		{"id": "r4"}, {"id": "r5", "bad": 1}, {"id": "r6"},
		{"id": "r7", "n": 1e-16384},
		{"id": "x", "v": "second"},
		{"id": "r9", "panic": true},
		{"id": "r10"}]`), 100)
	h := commands.NewImportChunkHandler(e.pool, e.importers(), readmodels.NewCompanies(e.pool, ""))
	for attempt := 1; attempt < 3; attempt++ {
		err := h.Handle(ctx, commands.ImportChunk{RunID: run, Seq: 0})
		if err == nil || pg.Transient(err) {
			t.Fatalf("attempt %d: %v, want a failure retrying does not cure", attempt, err)
		}
		if n, last := e.failuresOf(run, 0); n != attempt || last == "" || strings.Contains(last, "16384") {
			t.Fatalf("attempt %d: chunk failures %d, last %q", attempt, n, last)
		}
	}
	if err := h.Handle(ctx, commands.ImportChunk{RunID: run, Seq: 0}); err != nil {
		t.Fatalf("third attempt: %v", err)
	}
	r := e.wait(run)
	if r.State != importing.Completed || r.Accepted != 7 || r.Rejected != 4 {
		t.Errorf("run: %+v, want completed, 7 accepted and 4 rejected", r)
	}
	want := []importing.Rejection{
		{Index: 3, Reason: refused},
		{Index: 5, Reason: "records with a bad field are refused", Field: "bad"},
		{Index: 7, Reason: refused},
		{Index: 9, Reason: "the record could not be applied (internal error)"},
	}
	if diff := cmp.Diff(want, e.rejections(run)); diff != "" {
		t.Errorf("rejections (-want +got):\n%s", diff)
	}
	var vs []string
	rows, err := e.pool.Query(ctx, `SELECT data->>'v' FROM events WHERE stream_id = $1 ORDER BY stream_version`, testimporter.Stream(e.co.ID, "x"))
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var v string
		if err := rows.Scan(&v); err != nil {
			t.Fatal(err)
		}
		vs = append(vs, v)
	}
	if !cmp.Equal(vs, []string{"first", "second"}) {
		t.Errorf("events of x: %v, want first then second", vs)
	}
	if got := len(e.eventsPerRecord()); got != 6 {
		t.Errorf("%d streams, want 6 (r0 r1 x r4 r6 r10)", got)
	}
	var commits int
	if err := e.pool.QueryRow(ctx, `SELECT count(DISTINCT transaction_id) FROM events WHERE event_type = $1`, testimporter.RecordedType).Scan(&commits); err != nil {
		t.Fatal(err)
	}
	if commits != 1 || e.pendingPayloads() != 0 {
		t.Errorf("%d commits and %d payloads left, want the chunk's one commit and none", commits, e.pendingPayloads())
	}
}

// TestImportChunkIsolationStopsAtTransientErrors: an outage during the
// search for the records that fail a chunk rejects nothing and counts
// nothing against the chunk; the next attempt finds the record.
func TestImportChunkIsolationStopsAtTransientErrors(t *testing.T) {
	ctx := context.Background()
	e := newImportEnv(t, pgtest.NewPool(t))
	run := e.stage(upload(40, map[int]string{29: `"n": 1e-16384`}), 100)
	var mu sync.Mutex
	calls, outageFrom := 0, -1
	e.imp.Before = func(context.Context, commands.Chunk) error {
		mu.Lock()
		defer mu.Unlock()
		calls++
		if outageFrom >= 0 && calls >= outageFrom {
			return &pgconn.PgError{Severity: "FATAL", Code: "57P01", Message: "terminating connection due to administrator command"}
		}
		return nil
	}
	h := commands.NewImportChunkHandler(e.pool, e.importers(), readmodels.NewCompanies(e.pool, ""))
	for range 2 {
		if err := h.Handle(ctx, commands.ImportChunk{RunID: run, Seq: 0}); err == nil {
			t.Fatal("the chunk applied")
		}
	}
	// The server goes away after the search has made a few probes.
	for _, after := range []int{1, 2, 4, 8} {
		mu.Lock()
		calls, outageFrom = 0, after
		mu.Unlock()
		if err := h.Handle(ctx, commands.ImportChunk{RunID: run, Seq: 0}); !pg.Transient(err) {
			t.Fatalf("outage after %d probes: %v, want the transient error", after, err)
		}
		if rs := e.rejections(run); len(rs) != 0 {
			t.Fatalf("outage after %d probes: rejected %+v", after, rs)
		}
		if n, _ := e.failuresOf(run, 0); n != 2 {
			t.Fatalf("outage after %d probes: %d failures recorded, want still 2", after, n)
		}
	}
	mu.Lock()
	outageFrom = -1
	mu.Unlock()
	if err := h.Handle(ctx, commands.ImportChunk{RunID: run, Seq: 0}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]importing.Rejection{{Index: 29, Reason: refused}}, e.rejections(run)); diff != "" {
		t.Errorf("rejections (-want +got):\n%s", diff)
	}
	if r := e.wait(run); r.Accepted != 39 {
		t.Errorf("run %+v, want 39 accepted", r)
	}
}

// TestImportChunkFailureNotARecordsIsNotIsolated: a chunk that fails
// whatever records it applies (even none), or fails on PostgreSQL's
// complaint about the statement or the schema (an older binary after a
// migration), rejects nothing however often it fails: it stays pending,
// with its failures counted and shown among the imports that stand still.
func TestImportChunkFailureNotARecordsIsNotIsolated(t *testing.T) {
	for _, tc := range []struct {
		name   string
		before func(commands.Chunk) error
		reason string
	}{
		{"every chunk fails", func(commands.Chunk) error { return errors.New("the importer is broken") }, "the importer is broken"},
		{"schema", func(c commands.Chunk) error {
			if len(c.Records) > 3 && c.Reject[3] == "" {
				return &pgconn.PgError{Severity: "ERROR", Code: "42703", Message: `column "key_hash" does not exist`}
			}
			return nil
		}, `column … does not exist (SQLSTATE 42703)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			e := newImportEnv(t, pgtest.NewPool(t))
			run := e.stage(upload(10, nil), 100)
			e.imp.Before = func(_ context.Context, c commands.Chunk) error { return tc.before(c) }
			h := commands.NewImportChunkHandler(e.pool, e.importers(), readmodels.NewCompanies(e.pool, ""))
			for range 5 {
				if err := h.Handle(ctx, commands.ImportChunk{RunID: run, Seq: 0}); err == nil {
					t.Fatal("the chunk applied")
				}
			}
			if rs := e.rejections(run); len(rs) != 0 {
				t.Fatalf("rejected %+v", rs)
			}
			still, err := ingest.NewStore(e.pool).StoodStill(ctx, 0)
			if err != nil {
				t.Fatal(err)
			}
			if len(still) != 1 || still[0].RunID != run || still[0].Seq != 0 || still[0].Failures != 5 ||
				!strings.HasSuffix(still[0].LastFailure, tc.reason) || still[0].Entity != "customers" {
				t.Fatalf("imports that stood still: %+v", still)
			}
		})
	}
}

// TestImportWorkerIsolatesPoisonRecords: through the worker, a chunk with
// a record the store refuses is applied without it within its first
// delivery, the company's next upload follows, and the metrics and the log
// say what happened.
func TestImportWorkerIsolatesPoisonRecords(t *testing.T) {
	e := newImportEnv(t, pgtest.NewPool(t))
	a := e.stage(upload(25, map[int]string{12: `"n": 1e-16384`}), 10)
	b := e.stage(upload(3, nil), 10)
	reg := prometheus.NewRegistry()
	logs := &lockedBuffer{}
	e.startWorker(func(c *commands.ImportWorkerConfig) {
		c.Registerer = reg
		c.Logger = slog.New(slog.NewJSONHandler(logs, nil))
		c.StallAfter = time.Hour // the first delivery does it all
	})
	if r := e.wait(a); r.State != importing.Completed || r.Accepted != 24 || r.Rejected != 1 {
		t.Fatalf("poisoned run: %+v", r)
	}
	if r := e.wait(b); r.State != importing.Completed || r.Accepted != 3 {
		t.Fatalf("the next upload: %+v", r)
	}
	if diff := cmp.Diff([]importing.Rejection{{Index: 12, Reason: refused}}, e.rejections(a)); diff != "" {
		t.Errorf("rejections (-want +got):\n%s", diff)
	}
	if got := counter(t, reg, "clientele_import_records_isolated_total", "customers"); got != 1 {
		t.Errorf("records isolated: %v, want 1", got)
	}
	if got := counter(t, reg, "clientele_import_chunk_failures_total", "customers", "persistent"); got != 2 {
		t.Errorf("persistent chunk failures: %v, want 2", got)
	}
	log := logs.String()
	if !strings.Contains(log, `"msg":"an import record the store refuses is rejected; the rest of its chunk is applied","run_id":"`+a+`","seq":1,"index":12,"sqlstate":"22003","reason":"`+refused+`"`) {
		t.Errorf("no log line of the isolated record:\n%s", log)
	}
	if strings.Contains(log, "16384") {
		t.Errorf("the log quotes the value:\n%s", log)
	}
}

// counter returns the value of the named counter with the label values
// (in the order of the label names).
func counter(t *testing.T, reg *prometheus.Registry, name string, labels ...string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			var got []string
			for _, l := range m.GetLabel() {
				got = append(got, l.GetValue())
			}
			if slices.Equal(got, labels) {
				return m.GetCounter().GetValue()
			}
		}
	}
	t.Fatalf("no metric %s%v", name, labels)
	return 0
}

// lockedBuffer is a buffer that a logger writes from several goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
