package segments_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
)

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
