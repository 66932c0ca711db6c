package readmodels_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/clientele/clientele/internal/pg/pgtest"
	"github.com/clientele/clientele/readmodels"
)

// TestImportRuns lists a company's runs newest first, page by page,
// without the runs still receiving and without other companies' runs.
func TestImportRuns(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	_, err := pool.Exec(ctx, `
		INSERT INTO import_runs (id, company_id, entity, state, actor, source, correlation_id) VALUES
			('01a1', 'acme', 'customers', 'completed', 'system', 'api', 'c'),
			('01a2', 'acme', 'events', 'failed', 'system', 'sftp', 'c'),
			('01a3', 'acme', 'customers', 'receiving', 'system', 'api', 'c'),
			('01a4', 'globex', 'customers', 'completed', 'system', 'api', 'c'),
			('01a5', 'acme', 'sales', 'running', 'system', 'console', 'c')`)
	if err != nil {
		t.Fatal(err)
	}
	q := readmodels.NewImports(pool)
	var got []string
	pages, before := 0, ""
	for {
		runs, next, err := q.Runs(ctx, "acme", before, 2)
		if err != nil {
			t.Fatal(err)
		}
		pages++
		for _, r := range runs {
			if r.CompanyID != "acme" || r.CreatedAt.Location().String() != "UTC" {
				t.Errorf("run %+v", r)
			}
			got = append(got, r.ID+" "+r.Source)
		}
		if next == "" {
			break
		}
		before = next
	}
	if diff := cmp.Diff([]string{"01a5 console", "01a2 sftp", "01a1 api"}, got); diff != "" || pages != 2 {
		t.Errorf("%d pages, runs (-want +got):\n%s", pages, diff)
	}
	if _, _, err := q.Runs(ctx, "acme", "", 0); err == nil {
		t.Error("limit 0 accepted")
	}
}
