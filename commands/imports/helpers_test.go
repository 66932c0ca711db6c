package imports_test

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/clientele/clientele/commands"
	"github.com/clientele/clientele/commands/imports"
	"github.com/clientele/clientele/commands/imports/testimporter"
	"github.com/clientele/clientele/domain/access"
	"github.com/clientele/clientele/domain/company"
	"github.com/clientele/clientele/domain/importing"
	"github.com/clientele/clientele/eventstore/postgres"
	"github.com/clientele/clientele/internal/bus"
	"github.com/clientele/clientele/internal/crypto"
	"github.com/clientele/clientele/internal/ingest"
	"github.com/clientele/clientele/projections/projectors"
	"github.com/clientele/clientele/readmodels"
)

// importEnv is a database with a company, an event store and the import
// pipeline's pieces, for the test Importer.
type importEnv struct {
	t     *testing.T
	pool  *pgxpool.Pool
	store *postgres.Store
	co    company.Company
	imp   *testimporter.Importer
	runs  *readmodels.Imports
	keys  crypto.KeyStore // seals the staged chunks
}

func newImportEnv(t *testing.T, pool *pgxpool.Pool) *importEnv {
	t.Helper()
	store := postgres.New(pool, projectors.InlineHook())
	co, err := commands.New(store, time.Now).CreateCompany.Handle(context.Background(), commands.CreateCompany{
		Principal: access.System(""), Slug: "acme", Settings: company.Settings{Name: "Acme"},
	})
	if err != nil {
		t.Fatal(err)
	}
	return &importEnv{t: t, pool: pool, store: store, co: co, imp: &testimporter.Importer{Store: store}, runs: readmodels.NewImports(pool),
		keys: imports.TestKeys(t)}
}

func (e *importEnv) importers() map[importing.Entity]imports.Importer {
	return map[importing.Entity]imports.Importer{importing.Customers: e.imp}
}

// stage stages body in chunks of chunkRecords records.
func (e *importEnv) stage(body io.Reader, chunkRecords int) string {
	e.t.Helper()
	h := imports.NewStageUploadHandler(e.pool, e.keys, ingest.Limits{ChunkRecords: chunkRecords})
	ctx := commands.WithRequest(context.Background(), "api", "corr-1")
	up, err := h.Handle(ctx, imports.StageUpload{
		Principal: access.Principal{CompanyID: e.co.ID, TokenID: "tok1"}, Entity: importing.Customers, Format: ingest.JSON, Body: body,
	})
	if err != nil {
		e.t.Fatal(err)
	}
	return up.RunID
}

// startWorker runs a worker until the test ends.
func (e *importEnv) startWorker(configure ...func(*imports.ImportWorkerConfig)) *imports.ImportWorker {
	e.t.Helper()
	cfg := imports.ImportWorkerConfig{
		Pool: e.pool, Keys: e.keys, Importers: e.importers(), Companies: readmodels.NewCompanies(e.pool, ""),
		ConsumerSettings: bus.ConsumerSettings{PollInterval: 50 * time.Millisecond, RetryMaxInterval: 50 * time.Millisecond},
	}
	for _, f := range configure {
		f(&cfg)
	}
	w, err := imports.NewImportWorker(cfg)
	if err != nil {
		e.t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() { errc <- w.Run(context.Background()) }()
	e.t.Cleanup(func() {
		if err := w.Close(); err != nil {
			e.t.Errorf("close: %v", err)
		}
		if err := <-errc; err != nil {
			e.t.Errorf("run: %v", err)
		}
	})
	return w
}

// wait waits until the run is completed or failed, and returns it.
func (e *importEnv) wait(runID string) readmodels.ImportRun {
	e.t.Helper()
	return e.waitOf(e.co.ID, runID)
}

// waitOf waits for a run of the company to end.
func (e *importEnv) waitOf(companyID, runID string) readmodels.ImportRun {
	e.t.Helper()
	return e.waitProgressing(companyID, runID, func() int { return 0 })
}

// waitProgressing waits for a run of the company to end, failing when it
// has made no progress for a minute: progress is a count that grows as
// the run gets somewhere. A run whose work is long by design (a search
// for many records that fail a chunk) is held to going on, not to ending
// by a time that depends on the machine's load.
func (e *importEnv) waitProgressing(companyID, runID string, progress func() int) readmodels.ImportRun {
	e.t.Helper()
	deadline, last := time.Now().Add(60*time.Second), progress()
	for {
		r, err := e.runs.Run(context.Background(), companyID, runID)
		if err != nil {
			e.t.Fatal(err)
		}
		if r.State == importing.Completed || r.State == importing.Failed {
			return r
		}
		if p := progress(); p > last {
			deadline, last = time.Now().Add(60*time.Second), p
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("run %s still %s, with no progress for a minute: %+v", runID, r.State, r)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// eventsPerRecord counts the test Importer's events per record stream.
func (e *importEnv) eventsPerRecord() map[string]int {
	e.t.Helper()
	rows, err := e.pool.Query(context.Background(), `SELECT stream_id, count(*) FROM events WHERE event_type = $1 GROUP BY stream_id`, testimporter.RecordedType)
	if err != nil {
		e.t.Fatal(err)
	}
	out := map[string]int{}
	for rows.Next() {
		var s string
		var n int
		if err := rows.Scan(&s, &n); err != nil {
			e.t.Fatal(err)
		}
		out[s] = n
	}
	if err := rows.Err(); err != nil {
		e.t.Fatal(err)
	}
	return out
}

// pendingPayloads counts the chunks that still hold their records.
func (e *importEnv) pendingPayloads() int {
	e.t.Helper()
	var n int
	if err := e.pool.QueryRow(context.Background(), `SELECT count(*) FROM import_chunks WHERE payload IS NOT NULL`).Scan(&n); err != nil {
		e.t.Fatal(err)
	}
	return n
}
