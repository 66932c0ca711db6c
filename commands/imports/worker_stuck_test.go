package imports_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/clientele/clientele/commands"
	"github.com/clientele/clientele/commands/imports"
	"github.com/clientele/clientele/commands/imports/testimporter"
	"github.com/clientele/clientele/domain/access"
	"github.com/clientele/clientele/domain/company"
	"github.com/clientele/clientele/domain/importing"
	"github.com/clientele/clientele/internal/ingest"
	"github.com/clientele/clientele/internal/pg/pgtest"
)

// TestImportWorkerStuckChunk: a chunk that keeps failing stops its
// company's imports there and nothing else. Another company's upload is
// applied meanwhile (the worker does not hold its delivery, and with it
// every log reader of the server, for ever); the company's later upload
// waits; once the chunk can be applied, everything of the company is
// applied in upload order without a new upload to trigger it, and no
// record is lost or applied twice.
func TestImportWorkerStuckChunk(t *testing.T) {
	ctx := context.Background()
	e := newImportEnv(t, pgtest.NewPool(t))
	globex, err := commands.New(e.store, time.Now).CreateCompany.Handle(ctx, commands.CreateCompany{
		Principal: access.System(""), Slug: "globex", Settings: company.Settings{Name: "Globex"},
	})
	if err != nil {
		t.Fatal(err)
	}
	var broken atomic.Bool
	broken.Store(true)
	errStuck := errors.New("stuck")
	e.imp.Before = func(_ context.Context, c imports.Chunk) error {
		if c.Company.ID == e.co.ID && broken.Load() {
			return errStuck
		}
		return nil
	}
	a := e.stage(upload(30, nil), 10)
	stageFor := func(co company.Company, n int) string {
		h := imports.NewStageUploadHandler(e.pool, e.keys, ingest.Limits{ChunkRecords: 10})
		up, err := h.Handle(ctx, imports.StageUpload{
			Principal: access.Principal{CompanyID: co.ID, TokenID: "tok1"}, Entity: importing.Customers, Format: ingest.JSON, Body: upload(n, nil),
		})
		if err != nil {
			t.Fatal(err)
		}
		return up.RunID
	}
	g := stageFor(globex, 10)
	e.startWorker(func(c *imports.ImportWorkerConfig) {
		c.MessageAttempts, c.RetryMaxInterval, c.StallAfter = 2, 10*time.Millisecond, 500*time.Millisecond
	})

	if r := e.waitOf(globex.ID, g); r.State != importing.Completed || r.Accepted != 10 {
		t.Fatalf("the other company's run: %+v", r)
	}
	a2 := e.stage(upload(5, map[int]string{0: `"v": "later"`}), 10)
	time.Sleep(200 * time.Millisecond)
	for _, id := range []string{a, a2} {
		if r, _ := e.runs.Run(ctx, e.co.ID, id); r.Accepted != 0 || r.State == importing.Completed {
			t.Fatalf("run %s applied past the stuck chunk: %+v", id, r)
		}
	}

	broken.Store(false)
	ra, ra2 := e.wait(a), e.wait(a2)
	if ra.State != importing.Completed || ra.Accepted != 30 || ra2.State != importing.Completed || ra2.Accepted != 5 {
		t.Fatalf("runs after the fix: %+v, %+v", ra, ra2)
	}
	if ra2.StartedAt.Before(*ra.FinishedAt) {
		t.Errorf("the later upload started at %v, before the stuck one finished at %v", ra2.StartedAt, ra.FinishedAt)
	}
	want := map[string]int{}
	for i := range 30 {
		want[testimporter.Stream(e.co.ID, fmt.Sprintf("r%d", i))]++
	}
	for i := range 5 {
		want[testimporter.Stream(e.co.ID, fmt.Sprintf("r%d", i))]++
	}
	for i := range 10 {
		want[testimporter.Stream(globex.ID, fmt.Sprintf("r%d", i))]++
	}
	if diff := cmp.Diff(want, e.eventsPerRecord()); diff != "" {
		t.Errorf("events per record (-want +got):\n%s", diff)
	}
}

// TestImportWorkerLongUploadDoesNotStarveOthers: a company's upload
// queued behind other companies' long ones is applied by the resume loop
// once it has waited StallAfter, one chunk per company in turn, before the
// long ones end; each company's uploads still apply in their own order.
func TestImportWorkerLongUploadDoesNotStarveOthers(t *testing.T) {
	ctx := context.Background()
	e := newImportEnv(t, pgtest.NewPool(t))
	create := func(slug string) company.Company {
		co, err := commands.New(e.store, time.Now).CreateCompany.Handle(ctx, commands.CreateCompany{
			Principal: access.System(""), Slug: slug, Settings: company.Settings{Name: slug},
		})
		if err != nil {
			t.Fatal(err)
		}
		return co
	}
	initech, globex := create("initech"), create("globex")
	e.imp.Before = func(_ context.Context, c imports.Chunk) error {
		if c.Company.ID != globex.ID {
			time.Sleep(30 * time.Millisecond) // long uploads: 80 slow chunks each
		}
		return nil
	}
	stageFor := func(co company.Company, n int) string {
		h := imports.NewStageUploadHandler(e.pool, e.keys, ingest.Limits{ChunkRecords: 10})
		up, err := h.Handle(ctx, imports.StageUpload{
			Principal: access.Principal{CompanyID: co.ID, TokenID: "tok1"}, Entity: importing.Customers, Format: ingest.JSON, Body: upload(n, nil),
		})
		if err != nil {
			t.Fatal(err)
		}
		return up.RunID
	}
	long := e.stage(upload(800, nil), 10)
	long2 := stageFor(initech, 800)
	short := stageFor(globex, 10)
	e.startWorker(func(c *imports.ImportWorkerConfig) { c.StallAfter = 200 * time.Millisecond })
	done := e.waitOf(globex.ID, short)
	for _, r := range []struct{ co, run string }{{e.co.ID, long}, {initech.ID, long2}} {
		if got, _ := e.runs.Run(ctx, r.co, r.run); got.State == importing.Completed {
			t.Errorf("the short upload waited for a whole long one: it finished at %v, the long one %+v", done.FinishedAt, got)
		}
	}
	if r := e.wait(long); r.Accepted != 800 {
		t.Errorf("long run %+v", r)
	}
	if r := e.waitOf(initech.ID, long2); r.Accepted != 800 {
		t.Errorf("second long run %+v", r)
	}
}
