package systemtest_test

import (
	"context"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/clientele/clientele/api"
	"github.com/clientele/clientele/app"
	"github.com/clientele/clientele/commands/imports"
	"github.com/clientele/clientele/commands/imports/testimporter"
	"github.com/clientele/clientele/domain/importing"
	"github.com/clientele/clientele/eventstore/postgres"
	"github.com/clientele/clientele/internal/bus"
	"github.com/clientele/clientele/readmodels"
)

// withImporters replaces the server's Importers (and so its upload
// routes) with imps.
func withImporters(imps ...imports.Importer) func(*api.Config, *app.Application) {
	return func(_ *api.Config, d *app.Application) {
		d.Commands.Importers = map[importing.Entity]imports.Importer{}
		for _, imp := range imps {
			d.Commands.Importers[imp.Entity()] = imp
		}
	}
}

// newImportEnv is a server whose customers Importer is the test Importer
// (one event per record; records with a "bad" field rejected), with the
// import worker running.
func newImportEnv(t *testing.T, configure ...func(*api.Config, *app.Application)) (*env, *testimporter.Importer) {
	t.Helper()
	imp := &testimporter.Importer{Store: postgres.New(nil)}
	e := newEnv(t, append([]func(*api.Config, *app.Application){withImporters(imp)}, configure...)...)
	e.runImports()
	return e, imp
}

// runImports runs the import worker with the server's Importers, as serve
// does, until the test ends.
func (e *env) runImports() {
	e.t.Helper()
	w, err := imports.NewImportWorker(imports.ImportWorkerConfig{
		Pool: e.pool, Keys: e.keys, Importers: e.importers, Companies: readmodels.NewCompanies(e.pool, ""),
		ConsumerSettings: bus.ConsumerSettings{
			PollInterval: 50 * time.Millisecond, RetryMaxInterval: 50 * time.Millisecond,
			Logger: slog.New(slog.NewJSONHandler(e.logs, nil)),
		},
	})
	if err != nil {
		e.t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- w.Run(context.Background()) }()
	e.t.Cleanup(func() {
		_ = w.Close()
		if err := <-done; err != nil {
			e.t.Errorf("import worker: %v", err)
		}
	})
}

// uploadAnswer is the answer of an upload.
type uploadAnswer struct {
	Response string `json:"response"`
	RunID    string `json:"run_id"`
}

// mustUpload uploads and returns the run id.
func (e *env) mustUpload(token, path string, opts ...option) string {
	e.t.Helper()
	res := e.do(http.MethodPost, path, append([]option{bearer(token)}, opts...)...)
	res.wantStatus(e.t, http.StatusOK)
	var a uploadAnswer
	res.decode(e.t, &a)
	if a.Response != "ok" || a.RunID == "" {
		e.t.Fatalf("upload answer %s", res.body)
	}
	return a.RunID
}

// importAnswer is the answer of GET /api/imports/<id>/.
type importAnswer struct {
	Import struct {
		RunID      string  `json:"run_id"`
		Entity     string  `json:"entity"`
		State      string  `json:"state"`
		Source     string  `json:"source"`
		Received   int     `json:"received"`
		Accepted   int     `json:"accepted"`
		Rejected   int     `json:"rejected"`
		Failure    string  `json:"failure"`
		CreatedAt  string  `json:"created_at"`
		StartedAt  *string `json:"started_at"`
		FinishedAt *string `json:"finished_at"`
		// Warnings is nil only when the answer has null or no warnings;
		// a run without any answers [].
		Warnings   []importing.Warning `json:"warnings"`
		Rejections []struct {
			Index  int     `json:"index"`
			Reason string  `json:"reason"`
			Field  *string `json:"field"`
		} `json:"rejections"`
		NextURL string `json:"next_url"`
	} `json:"import"`
}

// waitRun polls the run until it is completed or failed, and returns the
// last answer.
func (e *env) waitRun(token, runID string, opts ...option) (importAnswer, response) {
	e.t.Helper()
	for deadline := time.Now().Add(60 * time.Second); ; {
		res := e.do(http.MethodGet, "/api/imports/"+runID+"/", append([]option{bearer(token)}, opts...)...)
		res.wantStatus(e.t, http.StatusOK)
		var a importAnswer
		res.decode(e.t, &a)
		if a.Import.State == "completed" || a.Import.State == "failed" {
			return a, res
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("run %s not done after a minute: %s", runID, res.body)
		}
		// Well under the default rate limit (50/s, burst 200), so that a
		// slow run on a busy machine fails on its state, not with a 429.
		time.Sleep(50 * time.Millisecond)
	}
}

// stagedRows counts the rows of the import tables and the chunk messages.
func (e *env) stagedRows() (runs, chunks, messages int) {
	e.t.Helper()
	err := e.pool.QueryRow(context.Background(), `SELECT (SELECT count(*) FROM import_runs),
		(SELECT count(*) FROM import_chunks), (SELECT count(*) FROM watermill_import_chunks)`).Scan(&runs, &chunks, &messages)
	if err != nil {
		e.t.Fatal(err)
	}
	return runs, chunks, messages
}
