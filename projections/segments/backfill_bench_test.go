package segments_test

import (
	"context"
	"testing"
	"time"

	"github.com/clientele/clientele/internal/pg/pgtest"
	"github.com/clientele/clientele/projections/segments"
)

// TestBackfillRate measures the backfill of three segments (a field
// leaf, an event window, a sales leaf) over 20,000 customers with 5
// events and 1 sale each, on the facts tables the projection keeps, and
// checks the members it finds. The rate is logged (go test -v).
func TestBackfillRate(t *testing.T) {
	if testing.Short() {
		t.Skip("a measurement")
	}
	pool := pgtest.NewPool(t)
	ctx := context.Background()
	now := time.Date(2026, 3, 15, 12, 0, 0, 0, time.UTC)
	const n = 20000
	for _, sql := range []string{
		`INSERT INTO segment_rules VALUES
			('co', 'hel', '{"field":"city","eq":"Helsinki"}', 'active'),
			('co', 'recent', '{"event":{"type":"BROWSE","within_days":7,"min_count":2}}', 'active'),
			('co', 'buyers', '{"all":[{"segment":"hel"},{"sales":{"within_days":30,"min_revenue":5000}}]}', 'active')`,
		`INSERT INTO segment_customers SELECT 'co', lpad(i::text, 8, '0'),
			jsonb_build_object('id', i::text, 'city', CASE WHEN i % 2 = 0 THEN 'Helsinki' ELSE 'Turku' END, 'tags', '[]'::jsonb)
			FROM generate_series(1, $1) i`,
		`INSERT INTO segment_activity SELECT 'co', i * 10 + j, lpad(i::text, 8, '0'), 'BROWSE',
			$2::timestamptz - make_interval(days => (i + j) % 20), '{"label":"home"}'::jsonb
			FROM generate_series(1, $1) i, generate_series(1, 5) j`,
		`INSERT INTO segment_sales SELECT 'co', 'S' || i, lpad(i::text, 8, '0'), $2::timestamptz - make_interval(days => i % 60),
			(i % 100) * 100, '{P1}', true FROM generate_series(1, $1) i`,
		`ANALYZE segment_customers, segment_activity, segment_sales`,
	} {
		args := []any{n, now}
		switch {
		case sql[:6] == "ANALYZ":
			args = nil
		case sql[:25] == "INSERT INTO segment_rules" || sql[:29] == "INSERT INTO segment_customers":
			if sql[:25] == "INSERT INTO segment_rules" {
				args = nil
			} else {
				args = args[:1]
			}
		}
		if _, err := pool.Exec(ctx, sql, args...); err != nil {
			t.Fatal(err)
		}
	}
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	start := time.Now()
	if err := segments.Backfill(ctx, tx, "co", now); err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	t.Logf("backfill of 3 segments over %d customers (%d events, %d sales): %s, %.0f customers/s",
		n, 5*n, n, took, float64(n)/took.Seconds())
	counts := map[string]int{}
	rows, err := tx.Query(ctx, `SELECT segment_key, count(*) FROM segment_members GROUP BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	var k string
	var c int
	for rows.Next() {
		if err := rows.Scan(&k, &c); err != nil {
			t.Fatal(err)
		}
		counts[k] = c
	}
	if counts["hel"] != n/2 || counts["recent"] == 0 || counts["recent"] == n || counts["buyers"] == 0 {
		t.Errorf("members %v", counts)
	}
}
