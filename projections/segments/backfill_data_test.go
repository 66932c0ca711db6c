package segments_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// insertFacts writes n customers of the company into the facts tables
// the projection keeps, with 5 events and 1 sale each, of every kind a
// leaf reads: fields of each JSON type, absent and null; events of three
// types with fields where leaves read, some dated ahead of now; sales
// counted or not, with a date or none, of one or two products.
func insertFacts(tb testing.TB, ctx context.Context, tx pgx.Tx, company string, n int, now time.Time) {
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

// mixedRules are 20 segments of every kind of leaf, segments of segments
// among them.
var mixedRules = [][2]string{
	{"s01", `{"field":"city","eq":"Helsinki"}`},
	{"s02", `{"field":"age","gte":30}`},
	{"s03", `{"field":"tags","contains":"vip"}`},
	{"s04", `{"field":"can_email","eq":true}`},
	{"s05", `{"field":"signup","within_days":90}`},
	{"s06", `{"field":"city","in":["Turku","Espoo"]}`},
	{"s07", `{"field":"age","exists":false}`},
	{"s08", `{"event":{"type":"BROWSE","within_days":14,"min_count":2}}`},
	{"s09", `{"event":{"type":"CLICK","where":[{"field":"label","eq":"cart"}],"within_days":30}}`},
	{"s10", `{"event":{"type":"OPEN","where":[{"field":"price","gt":50},{"field":"channel","ne":"web"}]}}`},
	{"s11", `{"sales":{"within_days":30,"min_revenue":5000}}`},
	{"s12", `{"sales":{"product_id":"P2","within_days":60}}`},
	{"s13", `{"sales":{"min_count":1}}`},
	{"s14", `{"all":[{"segment":"s01"},{"segment":"s08"}]}`},
	{"s15", `{"any":[{"segment":"s03"},{"segment":"s11"}]}`},
	{"s16", `{"not":{"segment":"s04"}}`},
	{"s17", `{"all":[{"field":"city","ne":"Helsinki"},{"event":{"type":"BROWSE","within_days":14}}]}`},
	{"s18", `{"any":[{"segment":"s14"},{"field":"signup","not_within_days":30}]}`},
	{"s19", `{"all":[{"segment":"s16"},{"sales":{"within_days":90,"min_revenue":1000}}]}`},
	{"s20", `{"not":{"any":[{"event":{"type":"OPEN","within_days":3}},{"field":"name","contains":"smith"}]}}`},
}

// setRule writes a segment's rule and state as the projector holds them.
func setRule(tb testing.TB, ctx context.Context, tx pgx.Tx, company, key, rule, state string) {
	tb.Helper()
	if _, err := tx.Exec(ctx, `INSERT INTO segment_rules (company_id, segment_key, rule, state) VALUES ($1, $2, $3, $4)
		ON CONFLICT (company_id, segment_key) DO UPDATE SET rule = excluded.rule, state = excluded.state`,
		company, key, rule, state); err != nil {
		tb.Fatal(err)
	}
}

// setMixedRules writes mixedRules, active.
func setMixedRules(tb testing.TB, ctx context.Context, tx pgx.Tx, company string) {
	tb.Helper()
	for _, r := range mixedRules {
		setRule(tb, ctx, tx, company, r[0], r[1], "active")
	}
}

func keysOf(rules [][2]string) []string {
	out := make([]string, len(rules))
	for i, r := range rules {
		out[i] = r[0]
	}
	return out
}
