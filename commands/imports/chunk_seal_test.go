package imports_test

import (
	"context"
	"testing"

	"github.com/clientele/clientele/domain/importing"
	"github.com/clientele/clientele/internal/pg/pgtest"
)

// TestStagedChunksSealed: an upload's records stand in no file of the
// staging's tables in clear, neither while the run waits for the worker
// nor once it is done (the payload deleted, its dead row version left);
// and the run's key is gone once the run is done, so that what is left
// of its chunks opens no more.
func TestStagedChunksSealed(t *testing.T) {
	ctx := context.Background()
	e := newImportEnv(t, pgtest.NewPool(t))
	const email = "sealed-person@example.test"
	run := e.stage(upload(3, map[int]string{1: `"email": "` + email + `"`}), 100)

	if files := pgtest.FilesHolding(t, e.pool, []byte(email), "import_chunks", "import_runs", "import_run_keys"); len(files) > 0 {
		t.Errorf("staged, the email stands in clear in %v", files)
	}
	var keys int
	if err := e.pool.QueryRow(ctx, `SELECT count(*) FROM import_run_keys WHERE run_id = $1`, run).Scan(&keys); err != nil || keys != 1 {
		t.Fatalf("staged: %d keys of the run (%v), want 1", keys, err)
	}

	e.startWorker()
	if r := e.wait(run); r.State != importing.Completed || r.Accepted != 3 {
		t.Fatalf("run: %+v", r)
	}
	if err := e.pool.QueryRow(ctx, `SELECT count(*) FROM import_run_keys WHERE run_id = $1`, run).Scan(&keys); err != nil || keys != 0 {
		t.Errorf("done: %d keys of the run (%v), want none", keys, err)
	}
	if files := pgtest.FilesHolding(t, e.pool, []byte(email), "import_chunks", "import_runs", "import_run_keys"); len(files) > 0 {
		t.Errorf("done, the email stands in clear in %v", files)
	}
}
