package readmodels

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/clientele/clientele/internal/pg/pgtest"
)

// TestPagePlanWithoutStatistics checks that a page without filters, or
// filtered by an identifier, is read along an index in page order and
// never sorted, on a table that has no statistics yet (as after a bulk
// import, before autovacuum analyses it): the planner, expecting few
// rows, would read every row of the company after the cursor and sort
// them, which made paging quadratic.
func TestPagePlanWithoutStatistics(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	_, err := pool.Exec(ctx, `INSERT INTO customers (company_id, customer_id, doc, version, created_at, updated_at)
		SELECT 'co1', lpad(i::text, 8, '0'), jsonb_build_object('id', lpad(i::text, 8, '0'),
			'email', 'p' || i || '@example.com', 'last_name', 'L' || i % 10), 1, now(), now()
		FROM generate_series(1, 20000) i`)
	if err != nil {
		t.Fatal(err)
	}
	for name, q := range map[string]PageQuery{
		"first page":    {CompanyID: "co1", Limit: 1000},
		"later page":    {CompanyID: "co1", After: "00005000", Limit: 1000},
		"by identifier": {CompanyID: "co1", Filters: []Filter{{"email", "p42@example.com"}}, Limit: 1000},
	} {
		sql, args, err := customersTable.pageSQL(q)
		if err != nil {
			t.Fatal(err)
		}
		var plan string
		err = customersTable.inKeyOrder(ctx, database{pool}, q, "EXPLAIN (FORMAT JSON) "+sql, args, func(rows pgx.Rows) error {
			for rows.Next() {
				if err := rows.Scan(&plan); err != nil {
					return err
				}
			}
			return rows.Err()
		})
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(plan, `"Sort"`) || !strings.Contains(plan, `"Index Scan"`) {
			t.Errorf("%s: plan with a sort, or without an index scan:\n%s", name, plan)
		}
	}
}
