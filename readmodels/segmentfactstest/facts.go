// Package segmentfactstest writes generated customers into the facts
// tables the segment membership projection keeps, for the tests and
// benchmarks of the projection (projections/segments) and of the
// preview that reads them (readmodels).
package segmentfactstest

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Insert writes n customers of the company into the facts tables
// the projection keeps, with 5 events and 1 sale each, of every kind a
// leaf reads: fields of each JSON type, absent and null; events of three
// types with fields where leaves read, some dated ahead of now; sales
// counted or not, with a date or none, of one or two products.
func Insert(tb testing.TB, ctx context.Context, tx pgx.Tx, company string, n int, now time.Time) {
	tb.Helper()
	for _, sql := range []string{
		`INSERT INTO segment_customers SELECT $1, lpad(i::text, 8, '0'), jsonb_strip_nulls(jsonb_build_object(
				'id', lpad(i::text, 8, '0'),
				'city', CASE WHEN i % 7 = 0 THEN NULL WHEN i % 3 = 0 THEN 'Turku' WHEN i % 3 = 1 THEN 'Helsinki' ELSE 'Espoo' END,
				'tags', CASE WHEN i % 5 = 0 THEN '["vip", "a"]'::jsonb ELSE '["a", "b"]'::jsonb END,
				'can_email', i % 3 = 0,
				'signup', to_char($2::timestamptz - make_interval(days => i % 400), 'YYYY-MM-DD'),
				'name', CASE WHEN i % 4 = 0 THEN 'Ann "A" Smith' END))
			|| CASE WHEN i % 11 = 0 THEN '{"age": null}'::jsonb ELSE jsonb_build_object('age', i % 80) END
			FROM generate_series(1, $3) i`,
		`INSERT INTO segment_activity SELECT $1, i * 10 + j, lpad(i::text, 8, '0'),
				(ARRAY['BROWSE', 'OPEN', 'CLICK'])[(i + j) % 3 + 1],
				CASE WHEN (i + j) % 17 = 0 THEN $2::timestamptz + make_interval(days => j, hours => i % 24)
					ELSE $2::timestamptz - make_interval(days => (i * 7 + j * 3) % 40, hours => i % 24) END,
				jsonb_build_object('label', (ARRAY['home', 'cart', 'list'])[(i * j) % 3 + 1], 'price', (i * j) % 100,
					'channel', CASE WHEN j = 1 THEN 'web' ELSE 'app' END)
			FROM generate_series(1, $3) i, generate_series(1, 5) j`,
		`INSERT INTO segment_sales SELECT $1, 'S' || i, lpad(i::text, 8, '0'),
				CASE WHEN i % 13 <> 0 THEN $2::timestamptz - make_interval(days => i % 90, hours => i % 24) END,
				(i % 100) * 100, CASE WHEN i % 2 = 0 THEN '{P1}'::text[] ELSE '{P2,P3}'::text[] END, i % 9 <> 0
			FROM generate_series(1, $3) i`,
	} {
		if _, err := tx.Exec(ctx, sql, company, now, n); err != nil {
			tb.Fatal(err)
		}
	}
}
