package imports_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/clientele/clientele/commands/imports"
	"github.com/clientele/clientele/commands/imports/testimporter"
	"github.com/clientele/clientele/domain/importing"
	"github.com/clientele/clientele/internal/pg/pgtest"
)

// upload is a JSON upload of records {"id": "r<i>", <extra>}; extra maps
// an index to the record's other fields (or, with "-", to a record
// without an id).
func upload(n int, extra map[int]string) *strings.Reader {
	var b strings.Builder
	b.WriteString(`{"customers": [`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		switch x := extra[i]; {
		case x == "-":
			b.WriteString(`{"name": "nobody"}`)
		case x != "":
			fmt.Fprintf(&b, `{"id": "r%d", %s}`, i, x)
		default:
			fmt.Fprintf(&b, `{"id": "r%d"}`, i)
		}
	}
	b.WriteString(`]}`)
	return strings.NewReader(b.String())
}

func TestImportWorker(t *testing.T) {
	ctx := context.Background()
	e := newImportEnv(t, pgtest.NewPool(t))
	a := e.stage(upload(250, map[int]string{7: `"bad": 1`, 42: "-", 150: `"bad": true`}), 100)
	b := e.stage(upload(20, map[int]string{3: `"v": "B"`}), 100)
	e.startWorker()

	ra, rb := e.wait(a), e.wait(b)
	if ra.State != importing.Completed || ra.Received != 250 || ra.Accepted != 247 || ra.Rejected != 3 || ra.StartedAt == nil || ra.FinishedAt == nil {
		t.Errorf("run A: %+v", ra)
	}
	if rb.State != importing.Completed || rb.Received != 20 || rb.Accepted != 20 || rb.Rejected != 0 {
		t.Errorf("run B: %+v", rb)
	}
	if rb.StartedAt.Before(*ra.FinishedAt) {
		t.Errorf("run B started at %v, before run A finished at %v", rb.StartedAt, ra.FinishedAt)
	}
	want := map[string]int{}
	for i := range 250 {
		if i != 7 && i != 42 && i != 150 {
			want[testimporter.Stream(e.co.ID, fmt.Sprintf("r%d", i))]++
		}
	}
	for i := range 20 {
		want[testimporter.Stream(e.co.ID, fmt.Sprintf("r%d", i))]++
	}
	if diff := cmp.Diff(want, e.eventsPerRecord()); diff != "" {
		t.Errorf("events per record (-want +got):\n%s", diff)
	}
	// The later upload wins: its event comes last.
	evs, err := e.store.ReadStream(ctx, testimporter.Stream(e.co.ID, "r3"), 0)
	if err != nil || len(evs) != 2 {
		t.Fatalf("stream r3: %d events, %v", len(evs), err)
	}
	if evs[0].Metadata.RunID != a || evs[1].Metadata.RunID != b || !strings.Contains(string(evs[1].Data), `"B"`) {
		t.Errorf("stream r3 in the wrong order: %+v", evs)
	}
	md := evs[0].Metadata
	if md.CompanyID != e.co.ID || md.Actor != "tokens/tok1" || md.Source != "api" || md.CorrelationID != "corr-1" {
		t.Errorf("metadata %+v", md)
	}
	if n := e.pendingPayloads(); n != 0 {
		t.Errorf("%d chunks still hold their records", n)
	}

	// Rejections, paged.
	page, next, err := e.runs.Rejections(ctx, a, "", 2)
	if err != nil || next == "" {
		t.Fatalf("first page: %v, next %q", err, next)
	}
	rest, last, err := e.runs.Rejections(ctx, a, next, 2)
	if err != nil || last != "" {
		t.Fatalf("second page: %v, next %q", err, last)
	}
	wantRej := []importing.Rejection{
		{Index: 7, Reason: "records with a bad field are refused", Field: "bad"},
		{Index: 42, Reason: "id is required", Field: "id"},
		{Index: 150, Reason: "records with a bad field are refused", Field: "bad"},
	}
	if diff := cmp.Diff(wantRej, append(page, rest...)); diff != "" {
		t.Errorf("rejections (-want +got):\n%s", diff)
	}
}

// TestImportWorkerRetries checks that a chunk whose import fails is
// retried, not skipped, and applied once it succeeds. The failure is
// transient (a lost serialization race): one that is not would have the
// third attempt look for the records that fail the chunk, with more calls
// of the Importer.
func TestImportWorkerRetries(t *testing.T) {
	e := newImportEnv(t, pgtest.NewPool(t))
	var failures atomic.Int32
	e.imp.Before = func(_ context.Context, c imports.Chunk) error {
		if c.Seq == 1 && failures.Add(1) <= 3 {
			return &pgconn.PgError{Severity: "ERROR", Code: "40001", Message: "could not serialize access due to concurrent update"}
		}
		return nil
	}
	run := e.stage(upload(30, nil), 10)
	e.startWorker()
	if r := e.wait(run); r.State != importing.Completed || r.Accepted != 30 {
		t.Errorf("run: %+v", r)
	}
	if n := failures.Load(); n != 4 {
		t.Errorf("chunk 1 tried %d times, want 4", n)
	}
	if got := e.eventsPerRecord(); len(got) != 30 {
		t.Errorf("%d records imported, want 30", len(got))
	}
}

// TestImportWorkerPermanentFailure checks that a chunk that can never be
// imported fails its run, and that the rest of the run is dropped.
func TestImportWorkerPermanentFailure(t *testing.T) {
	e := newImportEnv(t, pgtest.NewPool(t))
	e.imp.Before = func(_ context.Context, c imports.Chunk) error {
		if c.Seq == 1 {
			return imports.Permanent(errors.New("the chunk is beyond repair"))
		}
		return nil
	}
	run := e.stage(upload(30, nil), 10)
	next := e.stage(upload(5, nil), 10)
	e.startWorker()
	r := e.wait(run)
	if r.State != importing.Failed || r.Failure != "the chunk is beyond repair" || r.Accepted != 10 || r.FinishedAt == nil {
		t.Errorf("run: %+v", r)
	}
	if r := e.wait(next); r.State != importing.Completed {
		t.Errorf("the next run is %s, want completed", r.State)
	}
	if got := e.eventsPerRecord(); len(got) != 10 {
		t.Errorf("%d records imported, want the 10 of chunk 0", len(got))
	}
	if n := e.pendingPayloads(); n != 0 {
		t.Errorf("%d chunks still hold their records", n)
	}
}

// TestImportWorkerImporterBug checks that an Importer that miscounts
// fails the run rather than corrupting its counts.
func TestImportWorkerImporterBug(t *testing.T) {
	e := newImportEnv(t, pgtest.NewPool(t))
	liar := liarImporter{e.imp}
	run := e.stage(upload(3, nil), 10)
	e.startWorker(func(cfg *imports.ImportWorkerConfig) {
		cfg.Importers = map[importing.Entity]imports.Importer{importing.Customers: liar}
	})
	if r := e.wait(run); r.State != importing.Failed || !strings.Contains(r.Failure, "accepted 4 and rejected 0 of the 3 records") {
		t.Errorf("run: %+v", r)
	}
}

// liarImporter claims one record more than it accepted.
type liarImporter struct{ *testimporter.Importer }

func (l liarImporter) ImportChunk(ctx context.Context, tx pgx.Tx, c imports.Chunk) (importing.Outcome, error) {
	out, err := l.Importer.ImportChunk(ctx, tx, c)
	out.Accepted++
	return out, err
}
