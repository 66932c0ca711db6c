package readmodels_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/clientele/clientele/domain"
	"github.com/clientele/clientele/domain/importing"
	"github.com/clientele/clientele/internal/pg/pgtest"
	"github.com/clientele/clientele/readmodels"
)

func TestImports(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	_, err := pool.Exec(ctx, `
		INSERT INTO import_runs (id, company_id, entity, state, actor, source, correlation_id, received, accepted, rejected, started_at)
		VALUES ('run1', 'acme', 'customers', 'running', 'system', 'api', 'c', 10, 4, 3, now()),
		       ('run2', 'acme', 'customers', 'receiving', 'system', 'api', 'c', 0, 0, 0, NULL);
		INSERT INTO import_rejections (run_id, record_index, ord, reason, field) VALUES
			('run1', 1, 0, 'r1', 'email'), ('run1', 1, 1, 'r1b', ''), ('run1', 5, 0, 'r5', 'phone_number'),
			('run1', 12, 0, 'r12', ''), ('run2', 0, 0, 'other run', '');
		INSERT INTO import_warnings (run_id, field, count, first_index) VALUES
			('run1', 'store_id', 4, 3), ('run1', 'mage_type', 1, 3), ('run1', '(unnamed)', 2, 7), ('run1', 'state', 9, 0),
			('run2', 'other_run', 1, 0)`)
	if err != nil {
		t.Fatal(err)
	}
	q := readmodels.NewImports(pool)

	run, err := q.Run(ctx, "acme", "run1")
	if err != nil {
		t.Fatal(err)
	}
	if run.State != importing.Running || run.Received != 10 || run.Accepted != 4 || run.Rejected != 3 ||
		run.StartedAt == nil || run.FinishedAt != nil || run.CreatedAt.Location().String() != "UTC" {
		t.Errorf("run: %+v", run)
	}
	// Warnings by first index, then field; the run's own only.
	wantWarnings := []importing.Warning{{Field: "state", Count: 9, FirstIndex: 0}, {Field: "mage_type", Count: 1, FirstIndex: 3},
		{Field: "store_id", Count: 4, FirstIndex: 3}, {Field: "(unnamed)", Count: 2, FirstIndex: 7}}
	if diff := cmp.Diff(wantWarnings, run.Warnings); diff != "" || run.Source != "api" {
		t.Errorf("run source %q, warnings (-want +got):\n%s", run.Source, diff)
	}
	for name, tc := range map[string]struct{ company, id string }{
		"another company's": {"globex", "run1"},
		"still receiving":   {"acme", "run2"},
		"unknown":           {"acme", "nope"},
	} {
		if _, err := q.Run(ctx, tc.company, tc.id); domain.ErrorCode(err) != domain.NotFound {
			t.Errorf("%s run: %v, want not found", name, err)
		}
	}

	var got []importing.Rejection
	pages, after := 0, ""
	for {
		page, next, err := q.Rejections(ctx, "run1", after, 2)
		if err != nil {
			t.Fatal(err)
		}
		got, pages = append(got, page...), pages+1
		if next == "" {
			break
		}
		after = next
	}
	want := []importing.Rejection{{Index: 1, Reason: "r1", Field: "email"}, {Index: 1, Reason: "r1b"},
		{Index: 5, Reason: "r5", Field: "phone_number"}, {Index: 12, Reason: "r12"}}
	if diff := cmp.Diff(want, got); diff != "" || pages != 2 {
		t.Errorf("rejections in %d pages (-want +got):\n%s", pages, diff)
	}
	for _, bad := range []string{"x", "1", "1.x", "-1.0"} {
		if _, _, err := q.Rejections(ctx, "run1", bad, 2); domain.ErrorCode(err) != domain.Invalid {
			t.Errorf("cursor %q: %v, want invalid_request", bad, err)
		}
	}
}
