package imports_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

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

	if files := filesHolding(t, e.pool, []byte(email), "import_chunks", "import_runs", "import_run_keys"); len(files) > 0 {
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
	if files := filesHolding(t, e.pool, []byte(email), "import_chunks", "import_runs", "import_run_keys"); len(files) > 0 {
		t.Errorf("done, the email stands in clear in %v", files)
	}
}

// filesHolding returns the files of the tables (with their TOAST tables)
// in which needle stands, after a checkpoint has written every page out.
func filesHolding(t *testing.T, pool *pgxpool.Pool, needle []byte, tables ...string) []string {
	t.Helper()
	ctx := context.Background()
	if _, err := pool.Exec(ctx, `CHECKPOINT`); err != nil {
		t.Fatal(err)
	}
	rows, err := pool.Query(ctx, `SELECT current_setting('data_directory') || '/' || pg_relation_filepath(c.oid)
		FROM pg_class c WHERE c.oid IN (
			SELECT t::regclass FROM unnest($1::text[]) AS t
			UNION SELECT reltoastrelid FROM pg_class WHERE oid IN (SELECT t::regclass FROM unnest($1::text[]) AS t) AND reltoastrelid <> 0)`, tables)
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for rows.Next() {
		var p string
		if err := rows.Scan(&p); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	var found []string
	for _, p := range paths {
		segments, _ := filepath.Glob(p + "*") // the relation's segments and forks
		for _, f := range segments {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if bytes.Contains(b, needle) {
				found = append(found, f)
			}
		}
	}
	if len(paths) == 0 {
		t.Fatal("no files found for the tables")
	}
	return found
}
