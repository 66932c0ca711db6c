package imports_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/clientele/clientele/commands/imports"
	"github.com/clientele/clientele/domain"
	"github.com/clientele/clientele/domain/access"
	"github.com/clientele/clientele/domain/importing"
	"github.com/clientele/clientele/internal/ingest"
	"github.com/clientele/clientele/internal/ingest/ingesttest"
	"github.com/clientele/clientele/internal/pg"
	"github.com/clientele/clientele/internal/pg/pgtest"
)

// TestImportKilledWhileStaging kills a process in the middle of staging an
// upload: nothing is scheduled, the client never got a run id, and the
// worker's clean-up deletes what was staged.
func TestImportKilledWhileStaging(t *testing.T) {
	ctx := context.Background()
	url := pgtest.URL(t)
	pool, err := pg.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	e := newImportEnv(t, pool)

	runKilled(t, "TestHelperStagingProcess", killURL+"="+url, killAt+"=200000", killCompany+"="+e.co.ID)

	var runs, chunks, msgs int
	err = pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM import_runs WHERE state = 'receiving'),
		(SELECT count(*) FROM import_chunks), (SELECT count(*) FROM watermill_import_chunks)`).Scan(&runs, &chunks, &msgs)
	if err != nil {
		t.Fatal(err)
	}
	if runs != 1 || chunks == 0 || msgs != 0 {
		t.Fatalf("after the kill: %d receiving runs, %d chunks, %d messages; want 1, some, 0", runs, chunks, msgs)
	}
	var id string
	if err := pool.QueryRow(ctx, `SELECT id FROM import_runs`).Scan(&id); err != nil {
		t.Fatal(err)
	}
	if _, err := e.runs.Run(ctx, e.co.ID, id); domain.ErrorCode(err) != domain.NotFound {
		t.Errorf("the receiving run is visible: %v", err)
	}

	e.startWorker(func(cfg *imports.ImportWorkerConfig) {
		cfg.Now = func() time.Time { return time.Now().Add(2 * time.Hour) }
	})
	deadline := time.Now().Add(10 * time.Second)
	for runs+chunks > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d runs and %d chunks left after the clean-up", runs, chunks)
		}
		time.Sleep(10 * time.Millisecond)
		if err := pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM import_runs), (SELECT count(*) FROM import_chunks)`).Scan(&runs, &chunks); err != nil {
			t.Fatal(err)
		}
	}
}

// TestHelperStagingProcess stages an upload and kills itself halfway; it
// does nothing when run on its own.
func TestHelperStagingProcess(t *testing.T) {
	url := os.Getenv(killURL)
	if url == "" || os.Getenv(killCompany) == "" {
		t.Skip("run by TestImportKilledWhileStaging")
	}
	at, _ := strconv.ParseInt(os.Getenv(killAt), 10, 64)
	ctx := context.Background()
	pool, err := pg.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	h := imports.NewStageUploadHandler(pool, imports.TestKeys(t), ingest.Limits{ChunkRecords: 100})
	body := &killingReader{r: ingesttest.Upload(100_000, 100), at: at}
	_, err = h.Handle(ctx, imports.StageUpload{
		Principal: access.System(os.Getenv(killCompany)), Entity: importing.Customers, Format: ingest.JSON, Body: body,
	})
	t.Fatalf("still alive: %v", err)
}

// killingReader kills the process once at bytes were read.
type killingReader struct {
	r  io.Reader
	n  int64
	at int64
}

func (k *killingReader) Read(p []byte) (int, error) {
	if k.n >= k.at {
		die(fmt.Sprintf("while staging, after reading %d bytes", k.n))
	}
	n, err := k.r.Read(p)
	k.n += int64(n)
	return n, err
}
