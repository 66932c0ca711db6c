package imports_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/clientele/clientele/commands/imports"
	"github.com/clientele/clientele/domain/importing"
	"github.com/clientele/clientele/internal/ingest"
	"github.com/clientele/clientele/internal/ingest/ingesttest"
	"github.com/clientele/clientele/internal/pg/pgtest"
)

// finish applies chunk seq of run as an Importer would have, with the
// warnings given and every record accepted.
func finish(t *testing.T, pool *pgxpool.Pool, run string, seq int, warnings []importing.Warning) {
	t.Helper()
	ctx := context.Background()
	s := imports.NewStore(pool, imports.TestKeys(t))
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		c, ok, err := s.LockChunk(ctx, tx, run, seq)
		if err != nil || !ok {
			return fmt.Errorf("lock chunk %d: %v %v", seq, ok, err)
		}
		return s.FinishChunk(ctx, tx, c, importing.Outcome{Accepted: len(c.Records), Warnings: warnings})
	})
	if err != nil {
		t.Fatal(err)
	}
}

func runWarnings(t *testing.T, pool *pgxpool.Pool, run string) []importing.Warning {
	t.Helper()
	rows, err := pool.Query(context.Background(), `SELECT field, count, first_index FROM import_warnings
		WHERE run_id = $1 ORDER BY first_index, field`, run)
	if err != nil {
		t.Fatal(err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (importing.Warning, error) {
		var w importing.Warning
		return w, row.Scan(&w.Field, &w.Count, &w.FirstIndex)
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestFinishChunkWarnings: the warnings of a run's chunks add up, a field
// once with the counts summed and the least first index; a run lists at
// most importing.MaxWarnings fields, the first found, and those it lists
// go on counting once it is full. Each run has its own.
func TestFinishChunkWarnings(t *testing.T) {
	pool := pgtest.NewPool(t)
	if _, err := stage(t, pool, "run1", ingesttest.Upload(30, 40), ingest.Limits{ChunkRecords: 10}); err != nil {
		t.Fatal(err)
	}
	if _, err := stage(t, pool, "run2", ingesttest.Upload(10, 40), ingest.Limits{ChunkRecords: 10}); err != nil {
		t.Fatal(err)
	}
	many := func(from, n, first int) []importing.Warning {
		var out []importing.Warning
		for i := range n {
			out = append(out, importing.Warning{Field: fmt.Sprintf("f%04d", from+i), Count: 1, FirstIndex: first})
		}
		return out
	}
	// Chunk 0 (records 0-9): store_id and the first 600 odd fields.
	finish(t, pool, "run1", 0, append([]importing.Warning{{Field: "store_id", Count: 3, FirstIndex: 2}}, many(0, 600, 5)...))
	// Chunk 1: store_id again, 600 more fields, of which 399 fit, then a
	// field of chunk 0 again.
	finish(t, pool, "run1", 1, append(append([]importing.Warning{{Field: "store_id", Count: 4, FirstIndex: 10}}, many(600, 600, 11)...),
		importing.Warning{Field: "f0000", Count: 2, FirstIndex: 19}))
	// Chunk 2: the run is full: a new field is not listed, a listed one
	// counts on.
	finish(t, pool, "run1", 2, []importing.Warning{{Field: "mage_type", Count: 1, FirstIndex: 20}, {Field: "f0998", Count: 5, FirstIndex: 21}})
	finish(t, pool, "run2", 0, []importing.Warning{{Field: "mage_type", Count: 7, FirstIndex: 0}})

	got := runWarnings(t, pool, "run1")
	if len(got) != importing.MaxWarnings {
		t.Fatalf("run1 lists %d fields, want %d", len(got), importing.MaxWarnings)
	}
	want := map[string]importing.Warning{
		"store_id":  {Field: "store_id", Count: 7, FirstIndex: 2},
		"f0000":     {Field: "f0000", Count: 3, FirstIndex: 5},
		"f0599":     {Field: "f0599", Count: 1, FirstIndex: 5},
		"f0600":     {Field: "f0600", Count: 1, FirstIndex: 11},
		"f0998":     {Field: "f0998", Count: 6, FirstIndex: 11},
		"f0999":     {},
		"mage_type": {},
	}
	byField := map[string]importing.Warning{}
	for _, w := range got {
		byField[w.Field] = w
	}
	for f, w := range want {
		if diff := cmp.Diff(w, byField[f]); diff != "" {
			t.Errorf("run1 %s (-want +got; zero: not listed):\n%s", f, diff)
		}
	}
	if diff := cmp.Diff([]importing.Warning{{Field: "mage_type", Count: 7, FirstIndex: 0}}, runWarnings(t, pool, "run2")); diff != "" {
		t.Errorf("run2 (-want +got):\n%s", diff)
	}
	if state, _ := runState(t, pool, "run1"); state != "completed" {
		t.Errorf("run1 %s, want completed", state)
	}
	// No code deletes a run that has warnings today; whatever does one day
	// takes its warnings along.
	if _, err := pool.Exec(context.Background(), `DELETE FROM import_runs WHERE id = 'run2'`); err != nil {
		t.Fatal(err)
	}
	if got := runWarnings(t, pool, "run2"); len(got) != 0 {
		t.Errorf("a deleted run's warnings stay: %v", got)
	}
}
