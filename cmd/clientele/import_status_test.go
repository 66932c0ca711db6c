package main

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/clientele/clientele/internal/pg/pgtest"
)

// TestProjectionsStatusListsImportsStandingStill: `projections status`
// names the companies whose imports stand still, with the chunk that
// holds them back and its last failure, and says nothing of imports when
// none do.
func TestProjectionsStatusListsImportsStandingStill(t *testing.T) {
	url := pgtest.URL(t)
	getenv := env(map[string]string{"DATABASE_URL": url, "CLIENTELE_LOG_LEVEL": "warn"})
	if out := mustRun(t, getenv, "projections", "status", "--sample", "0"); strings.Contains(out, "IMPORTS") {
		t.Errorf("imports listed while none stand still:\n%s", out)
	}

	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `INSERT INTO import_runs (id, company_id, entity, state, actor, source, correlation_id, chunks, updated_at)
		VALUES ('run-1', 'co-1', 'shops', 'running', 'tokens/t', 'api', 'c', 2, now() - interval '5 minutes');
		INSERT INTO import_chunks (run_id, seq, first_index, records, payload, processed_at) VALUES ('run-1', 0, 0, 1, NULL, now());
		INSERT INTO import_chunks (run_id, seq, first_index, records, payload, failures, last_failure)
		VALUES ('run-1', 1, 1, 1, '{}', 4, 'the importer is broken')`); err != nil {
		t.Fatal(err)
	}
	out := mustRun(t, getenv, "projections", "status", "--sample", "0")
	i := strings.Index(out, "IMPORTS STANDING STILL")
	if i < 0 {
		t.Fatalf("no imports standing still:\n%s", out)
	}
	lines := strings.Split(strings.TrimSpace(out[i:]), "\n")
	if f := strings.Fields(lines[len(lines)-1]); len(lines) != 3 || len(f) < 6 ||
		strings.Join(append(f[:4:4], f[5:]...), " ") != "co-1 run-1 shops 1 4 the importer is broken" {
		t.Errorf("imports standing still:\n%s", out[i:])
	}
}
