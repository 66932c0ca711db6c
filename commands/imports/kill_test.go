package imports_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/clientele/clientele/commands/imports"
	"github.com/clientele/clientele/commands/imports/testimporter"
	"github.com/clientele/clientele/domain/importing"
	"github.com/clientele/clientele/eventstore/postgres"
	"github.com/clientele/clientele/internal/bus"
	"github.com/clientele/clientele/internal/pg"
	"github.com/clientele/clientele/internal/pg/pgtest"
	"github.com/clientele/clientele/readmodels"
)

// The helper processes read these.
const (
	killURL     = "CLIENTELE_IMPORT_HELPER_URL"
	killMode    = "CLIENTELE_IMPORT_HELPER_MODE" // after-commit, in-chunk, staging
	killAt      = "CLIENTELE_IMPORT_HELPER_AT"   // chunk seq, or bytes read
	killCompany = "CLIENTELE_IMPORT_HELPER_COMPANY"
)

// runKilled runs the helper process and fails unless it died of SIGKILL.
func runKilled(t *testing.T, helper string, env ...string) {
	t.Helper()
	var out bytes.Buffer
	cmd := exec.Command(os.Args[0], "-test.run=^"+helper+"$", "-test.v")
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || !exit.Sys().(syscall.WaitStatus).Signaled() || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("helper process: %v, want killed by SIGKILL; output:\n%s", err, out.Bytes())
	}
}

func die(what string) {
	fmt.Println("killing myself", what)
	_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
	select {} // never go on
}

// TestImportKilledWorker kills a worker process in the middle of an import,
// once between a chunk's commit and its ack (the chunk comes again and
// must be skipped) and once inside a chunk's transaction (the chunk must
// be applied by the next worker), then lets a new worker finish: every
// record is applied exactly once and the counts are right.
func TestImportKilledWorker(t *testing.T) {
	for _, tc := range []struct {
		mode string
		done int // chunks processed when the process died
	}{{"after-commit", 5}, {"in-chunk", 4}} {
		t.Run(tc.mode, func(t *testing.T) {
			ctx := context.Background()
			url := pgtest.URL(t)
			pool, err := pg.Open(ctx, url)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(pool.Close)
			e := newImportEnv(t, pool)
			run := e.stage(upload(200, map[int]string{33: `"bad": 1`}), 20)

			runKilled(t, "TestHelperImportWorker", killURL+"="+url, killMode+"="+tc.mode, killAt+"=4")

			var processed int
			if err := pool.QueryRow(ctx, `SELECT count(*) FROM import_chunks WHERE processed_at IS NOT NULL`).Scan(&processed); err != nil {
				t.Fatal(err)
			}
			if processed != tc.done {
				t.Fatalf("%d chunks processed when the worker died, want %d", processed, tc.done)
			}
			e.startWorker()
			r := e.wait(run)
			if r.State != importing.Completed || r.Received != 200 || r.Accepted != 199 || r.Rejected != 1 {
				t.Errorf("run: %+v", r)
			}
			got := e.eventsPerRecord()
			for i := range 200 {
				s := testimporter.Stream(e.co.ID, fmt.Sprintf("r%d", i))
				if want := map[bool]int{true: 0, false: 1}[i == 33]; got[s] != want {
					t.Errorf("record %d: %d events, want %d", i, got[s], want)
				}
			}
			if len(got) != 199 {
				t.Errorf("%d records have events, want 199", len(got))
			}
		})
	}
}

// TestHelperImportWorker is the worker TestImportKilledWorker kills; it
// does nothing when run on its own.
func TestHelperImportWorker(t *testing.T) {
	url := os.Getenv(killURL)
	if url == "" {
		t.Skip("run by TestImportKilledWorker")
	}
	at, _ := strconv.Atoi(os.Getenv(killAt))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pool, err := pg.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	imp := &testimporter.Importer{Store: postgres.New(pool)}
	cfg := imports.ImportWorkerConfig{
		Pool: pool, Keys: imports.TestKeys(t), Importers: map[importing.Entity]imports.Importer{importing.Customers: imp},
		Companies: readmodels.NewCompanies(pool, ""), ConsumerSettings: bus.ConsumerSettings{PollInterval: 10 * time.Millisecond},
	}
	switch os.Getenv(killMode) {
	case "after-commit":
		cfg.AfterChunk = func(_ string, seq int) {
			if seq == at {
				die(fmt.Sprintf("after chunk %d committed, before its ack", seq))
			}
		}
	case "in-chunk":
		imp.Before = func(_ context.Context, c imports.Chunk) error {
			if c.Seq == at {
				die(fmt.Sprintf("inside the transaction of chunk %d", c.Seq))
			}
			return nil
		}
	}
	w, err := imports.NewImportWorker(cfg)
	if err != nil {
		t.Fatal(err)
	}
	err = w.Run(ctx)
	t.Fatalf("still alive: Run = %v", err)
}
