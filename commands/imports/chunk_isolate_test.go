package imports_test

import (
	"context"
	"errors"
	"fmt"
	"github.com/clientele/clientele/internal/testlog"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/clientele/clientele/commands/imports"
	"github.com/clientele/clientele/commands/imports/testimporter"
	"github.com/clientele/clientele/domain/importing"
	"github.com/clientele/clientele/eventstore"
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
	h := imports.NewImportChunkHandler(e.pool, e.keys, e.importers(), readmodels.NewCompanies(e.pool, ""))
	for attempt := 1; attempt < 3; attempt++ {
		err := h.Handle(ctx, imports.ImportChunk{RunID: run, Seq: 0})
		if err == nil || pg.Transient(err) {
			t.Fatalf("attempt %d: %v, want a failure retrying does not cure", attempt, err)
		}
		if n, last := e.failuresOf(run, 0); n != attempt || last == "" || strings.Contains(last, "16384") {
			t.Fatalf("attempt %d: chunk failures %d, last %q", attempt, n, last)
		}
	}
	if err := h.Handle(ctx, imports.ImportChunk{RunID: run, Seq: 0}); err != nil {
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

// isolationOf returns the progress of the search for the records that fail
// a chunk, as stored on it.
func (e *importEnv) isolationOf(run string, seq int) *imports.Isolation {
	e.t.Helper()
	var iso *imports.Isolation
	if err := e.pool.QueryRow(context.Background(), `SELECT isolation FROM import_chunks WHERE run_id = $1 AND seq = $2`,
		run, seq).Scan(&iso); err != nil {
		e.t.Fatal(err)
	}
	return iso
}

// isolatedSoFar counts the records found so far to fail the chunks of a
// run still to be applied.
func (e *importEnv) isolatedSoFar(run string) int {
	e.t.Helper()
	var n int
	if err := e.pool.QueryRow(context.Background(), `SELECT coalesce(sum(jsonb_array_length(isolation->'records')), 0)
		FROM import_chunks WHERE run_id = $1 AND processed_at IS NULL`, run).Scan(&n); err != nil {
		e.t.Fatal(err)
	}
	return n
}

// liveXids returns the most XIDs (of the transaction and its live
// subtransactions) that a backend of the database other than the caller's
// holds: each holds a lock on its XID until it ends, and a subtransaction
// released hands its XID to its parent's (it stays in the backend's cache
// of 64 subtransactions, but not in pg_locks) while one rolled back drops
// it.
func (e *importEnv) liveXids(ctx context.Context) (int, error) {
	var n int
	err := e.pool.QueryRow(ctx, `SELECT coalesce(max(n), 0) FROM (
			SELECT l.pid, count(*) AS n FROM pg_locks l JOIN pg_stat_activity a USING (pid)
			WHERE l.locktype = 'transactionid' AND a.datname = current_database() AND l.pid <> pg_backend_pid()
			GROUP BY l.pid) s`).Scan(&n)
	return n, err
}

// isolateProbes is commands.isolateProbes, the probes an attempt at a chunk
// of 1,000 records makes at most.
const isolateProbes = 32

// manyRecords is the size of a chunk with a refused record in ten: more
// than one attempt's probes can isolate, so the search spans attempts.
const manyRecords = 400

// TestImportChunkIsolatesManyRecordsInBoundedAttempts: the records the
// store refuses among a chunk's manyRecords (one in ten) are found over
// several attempts, each of a fresh handler (as after a restart), each
// making at most isolateProbes probes and going on from what the attempts
// before it stored on the chunk; the chunk then applies once, in one
// commit, with exactly those records rejected. The probes' savepoints
// leave no subtransaction behind.
func TestImportChunkIsolatesManyRecordsInBoundedAttempts(t *testing.T) {
	ctx := context.Background()
	e := newImportEnv(t, pgtest.NewPool(t))
	bad := map[int]string{}
	var want []importing.Rejection
	for i := 7; i < manyRecords; i += 10 {
		bad[i] = `"n": 1e-16384`
		want = append(want, importing.Rejection{Index: i, Reason: refused})
	}
	run := e.stage(upload(manyRecords, bad), manyRecords)
	var probes, xids int
	var whole []int // what the attempt's second probe, the whole chunk, rejects
	e.imp.Before = func(ctx context.Context, c imports.Chunk) error {
		probes++
		if probes == 2 {
			whole = slices.Sorted(maps.Keys(c.Reject))
		}
		n, err := e.liveXids(ctx)
		xids = max(xids, n)
		return err
	}
	var took, longest time.Duration
	total, attempts := 0, 0
	for attempt := 1; ; attempt++ {
		if attempt > 100 {
			t.Fatal("the chunk is not applied after 100 attempts")
		}
		var stored []int
		if iso := e.isolationOf(run, 0); iso != nil {
			for _, r := range iso.Records {
				stored = append(stored, r.Index)
			}
			slices.Sort(stored)
		}
		probes, whole = 0, nil
		h := imports.NewImportChunkHandler(e.pool, e.keys, e.importers(), readmodels.NewCompanies(e.pool, ""))
		start := time.Now()
		err := h.Handle(ctx, imports.ImportChunk{RunID: run, Seq: 0})
		d := time.Since(start)
		if attempt < 3 {
			if err == nil || probes != 1 {
				t.Fatalf("attempt %d: %v after %d probes, want a failure of the chunk as it is", attempt, err, probes)
			}
			continue
		}
		attempts, total, took, longest = attempts+1, total+probes, took+d, max(longest, d)
		if probes > isolateProbes {
			t.Fatalf("attempt %d made %d probes, want at most %d", attempt, probes, isolateProbes)
		}
		if !slices.Equal(whole, stored) {
			t.Fatalf("attempt %d: the whole chunk rejects %v, want the %d records stored %v", attempt, whole, len(stored), stored)
		}
		if err == nil {
			break
		}
		if pg.Transient(err) {
			t.Fatalf("attempt %d: %v", attempt, err)
		}
		iso := e.isolationOf(run, 0)
		if iso == nil || len(iso.Records) <= len(stored) {
			t.Fatalf("attempt %d found no record: %v; stored %+v", attempt, err, iso)
		}
	}
	t.Logf("%d searching attempts, %d probes, %v in all, the longest %v", attempts, total, took, longest)
	if attempts < 3 {
		t.Errorf("isolated in %d attempts, want several bounded ones", attempts)
	}
	if xids > 1 {
		t.Errorf("the chunk's transaction held %d XIDs at the start of a probe, want its own alone", xids)
	}
	if r := e.wait(run); r.State != importing.Completed || r.Accepted != manyRecords*9/10 || r.Rejected != manyRecords/10 {
		t.Errorf("run: %+v, want completed, %d accepted and %d rejected", r, manyRecords*9/10, manyRecords/10)
	}
	rs, _, err := e.runs.Rejections(ctx, run, "", manyRecords)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, rs); diff != "" {
		t.Errorf("rejections (-want +got):\n%s", diff)
	}
	var commits int
	if err := e.pool.QueryRow(ctx, `SELECT count(DISTINCT transaction_id) FROM events WHERE event_type = $1`, testimporter.RecordedType).Scan(&commits); err != nil {
		t.Fatal(err)
	}
	if commits != 1 || len(e.eventsPerRecord()) != manyRecords*9/10 || e.pendingPayloads() != 0 || e.isolationOf(run, 0) != nil {
		t.Errorf("%d commits, %d streams, %d payloads left, want the chunk's one commit of %d streams and no payload nor isolation left",
			commits, len(e.eventsPerRecord()), e.pendingPayloads(), manyRecords*9/10)
	}
}

// TestImportChunkIsolationChecksWhatWasStored: the search goes on from
// the prefix an earlier attempt found to apply, but does not blame the
// record after it on that word alone: when that prefix fails now (the
// state changed between attempts), the search starts over.
func TestImportChunkIsolationChecksWhatWasStored(t *testing.T) {
	ctx := context.Background()
	e := newImportEnv(t, pgtest.NewPool(t))
	run := e.stage(upload(40, map[int]string{29: `"n": 1e-16384`}), 100)
	if _, err := e.pool.Exec(ctx, `UPDATE import_chunks SET failures = 2, isolation = '{"applies": 35, "records": []}'
		WHERE run_id = $1 AND seq = 0`, run); err != nil {
		t.Fatal(err)
	}
	h := imports.NewImportChunkHandler(e.pool, e.keys, e.importers(), readmodels.NewCompanies(e.pool, ""))
	if err := h.Handle(ctx, imports.ImportChunk{RunID: run, Seq: 0}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]importing.Rejection{{Index: 29, Reason: refused}}, e.rejections(run)); diff != "" {
		t.Errorf("rejections (-want +got):\n%s", diff)
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
	e.imp.Before = func(context.Context, imports.Chunk) error {
		mu.Lock()
		defer mu.Unlock()
		calls++
		if outageFrom >= 0 && calls >= outageFrom {
			return &pgconn.PgError{Severity: "FATAL", Code: "57P01", Message: "terminating connection due to administrator command"}
		}
		return nil
	}
	h := imports.NewImportChunkHandler(e.pool, e.keys, e.importers(), readmodels.NewCompanies(e.pool, ""))
	for range 2 {
		if err := h.Handle(ctx, imports.ImportChunk{RunID: run, Seq: 0}); err == nil {
			t.Fatal("the chunk applied")
		}
	}
	// The server goes away after the search has made a few probes.
	for _, after := range []int{1, 2, 4, 8} {
		mu.Lock()
		calls, outageFrom = 0, after
		mu.Unlock()
		if err := h.Handle(ctx, imports.ImportChunk{RunID: run, Seq: 0}); !pg.Transient(err) {
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
	if err := h.Handle(ctx, imports.ImportChunk{RunID: run, Seq: 0}); err != nil {
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
		before func(imports.Chunk) error
		reason string
	}{
		{"every chunk fails", func(imports.Chunk) error { return errors.New("the importer is broken") }, "the importer is broken"},
		{"schema", func(c imports.Chunk) error {
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
			e.imp.Before = func(_ context.Context, c imports.Chunk) error { return tc.before(c) }
			h := imports.NewImportChunkHandler(e.pool, e.keys, e.importers(), readmodels.NewCompanies(e.pool, ""))
			for range 5 {
				if err := h.Handle(ctx, imports.ImportChunk{RunID: run, Seq: 0}); err == nil {
					t.Fatal("the chunk applied")
				}
			}
			if rs := e.rejections(run); len(rs) != 0 {
				t.Fatalf("rejected %+v", rs)
			}
			still, err := imports.NewStore(e.pool, e.keys).StoodStill(ctx, 0)
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

// TestImportChunkLostRaceIsRetried: a chunk that loses a race for a
// stream (another writer, such as the token backfill, appended to one of
// its customers meanwhile) is retried as it is: however often that
// happens, nothing is counted against the chunk and nothing rejected.
func TestImportChunkLostRaceIsRetried(t *testing.T) {
	ctx := context.Background()
	e := newImportEnv(t, pgtest.NewPool(t))
	run := e.stage(upload(10, nil), 100)
	races := 5
	e.imp.Before = func(context.Context, imports.Chunk) error {
		if races > 0 {
			races--
			return fmt.Errorf("append: %w", &eventstore.ConflictError{StreamID: "customer-acme-1", Expected: 1, Actual: 2})
		}
		return nil
	}
	h := imports.NewImportChunkHandler(e.pool, e.keys, e.importers(), readmodels.NewCompanies(e.pool, ""))
	for range 5 {
		var conflict *eventstore.ConflictError
		if err := h.Handle(ctx, imports.ImportChunk{RunID: run, Seq: 0}); !errors.As(err, &conflict) {
			t.Fatalf("Handle: %v, want the conflict", err)
		}
		if n, _ := e.failuresOf(run, 0); n != 0 {
			t.Fatalf("%d failures recorded for a lost race", n)
		}
	}
	if err := h.Handle(ctx, imports.ImportChunk{RunID: run, Seq: 0}); err != nil {
		t.Fatal(err)
	}
	if r := e.wait(run); r.Accepted != 10 || r.Rejected != 0 {
		t.Errorf("run %+v, want 10 accepted", r)
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
	logs := &testlog.Buffer{}
	e.startWorker(func(c *imports.ImportWorkerConfig) {
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

// TestImportWorkerGoesOnWhileIsolating: a chunk whose search for the
// records the store refuses takes many bounded attempts (one in ten of its
// manyRecords) is taken up again at once after each, not after the
// backoff of failures that may pass (here an hour: StallAfter), so the
// chunk and the company's next upload apply.
func TestImportWorkerGoesOnWhileIsolating(t *testing.T) {
	e := newImportEnv(t, pgtest.NewPool(t))
	bad := map[int]string{}
	for i := 7; i < manyRecords; i += 10 {
		bad[i] = `"n": 1e-16384`
	}
	a := e.stage(upload(manyRecords, bad), manyRecords)
	b := e.stage(upload(3, nil), 10)
	e.startWorker(func(c *imports.ImportWorkerConfig) { c.StallAfter = time.Hour })
	// The search makes hundreds of probes of up to manyRecords records:
	// seconds on a quiet machine, a minute on a loaded one. What must
	// hold is that every attempt gets somewhere.
	if r := e.waitProgressing(e.co.ID, a, func() int { return e.isolatedSoFar(a) }); r.State != importing.Completed || r.Accepted != manyRecords*9/10 || r.Rejected != manyRecords/10 {
		t.Fatalf("poisoned run: %+v", r)
	}
	if r := e.wait(b); r.State != importing.Completed || r.Accepted != 3 {
		t.Fatalf("the next upload: %+v", r)
	}
}
