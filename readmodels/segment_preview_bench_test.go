package readmodels_test

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/clientele/clientele/readmodels/segmentfactstest"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/clientele/clientele/domain/segment"
	"github.com/clientele/clientele/internal/pg/pgtest"
	"github.com/clientele/clientele/readmodels"
)

// previewRule is the rule BenchmarkSegmentPreview previews: three leaves,
// one of them an event window (issue 28).
const previewRule = `{"all": [{"field": "city", "eq": "Helsinki"}, {"event": {"type": "BROWSE", "within_days": 7}},
	{"sales": {"within_days": 30, "min_revenue": 1000}}]}`

// BenchmarkSegmentPreview measures the preview of previewRule over a
// company of 100,000 customers (CLIENTELE_PREVIEW_CUSTOMERS) with 5
// events and 1 sale each and 20 active segments with their members (the
// backfill's), on the membership facts: 20 previews decided with
// segment.Decide on the facts read in ranges (the preview before, the
// baseline), and 20 decided in one statement, then 20 more with indexes
// of the events' and sales' windows made for them (measured, not a
// migration), in the same run; it reports the p50 and p95 of each and
// logs their ratios and the plans of the statement (EXPLAIN ANALYZE).
//
//	go test -run '^$' -bench BenchmarkSegmentPreview -benchtime 1x ./readmodels/
//	CLIENTELE_PREVIEW_CUSTOMERS=1000000 go test -timeout 60m -run '^$' -bench BenchmarkSegmentPreview -benchtime 1x ./readmodels/
func BenchmarkSegmentPreview(b *testing.B) {
	n := 100_000
	if s := os.Getenv("CLIENTELE_PREVIEW_CUSTOMERS"); s != "" {
		var err error
		if n, err = strconv.Atoi(s); err != nil {
			b.Fatal(err)
		}
	}
	pool := pgtest.NewPool(b)
	ctx := context.Background()
	now := time.Date(2026, 3, 15, 12, 0, 0, 0, time.UTC)
	const company = "co"
	setup := time.Now()
	tx, err := pool.Begin(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	segmentfactstest.Insert(b, ctx, tx, company, n, now)
	insertPreviewMembers(b, ctx, tx, company, now)
	if err := tx.Commit(ctx); err != nil {
		b.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `VACUUM ANALYZE segment_customers, segment_activity, segment_sales, segment_members`); err != nil {
		b.Fatal(err)
	}
	var members int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM segment_members`).Scan(&members); err != nil {
		b.Fatal(err)
	}
	b.Logf("%d customers, %d events, %d sales, 20 segments with %d members: set up in %s", n, 5*n, n, members, time.Since(setup).Round(time.Second))

	rule, err := segment.ParseRule(json.RawMessage(previewRule))
	if err != nil {
		b.Fatal(err)
	}
	at := now.Add(time.Minute)
	q := readmodels.NewSegments(pool)
	explain := func(name string) {
		settings, sql, args, err := readmodels.PreviewStatement(company, rule, at)
		if err != nil {
			b.Fatal(err)
		}
		tx, err := pool.Begin(ctx)
		if err != nil {
			b.Fatal(err)
		}
		defer func() { _ = tx.Rollback(ctx) }()
		for _, set := range settings {
			if _, err := tx.Exec(ctx, set); err != nil {
				b.Fatal(err)
			}
		}
		rows, err := tx.Query(ctx, `EXPLAIN (ANALYZE, BUFFERS) `+sql, args...)
		if err != nil {
			b.Fatal(err)
		}
		plan, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			b.Fatal(err)
		}
		b.Logf("%s: the statement's plan:\n%s", name, strings.Join(plan, "\n"))
	}
	// Indexes of the events by type and date and of the counted sales by
	// date, with what the statement reads of them, made for its second
	// run only: measured, not a migration (docs/benchmarks.md, "The
	// preview in one SQL statement").
	windowIndexes := []string{
		`CREATE INDEX segment_activity_type_at ON segment_activity (company_id, type, at) INCLUDE (customer_id)`,
		`CREATE INDEX segment_sales_counted_at ON segment_sales (company_id, at) INCLUDE (customer_id, revenue)
			WHERE counted AND at IS NOT NULL`,
	}

	const previews = 20
	p50 := map[string]time.Duration{}
	var answers []string
	for _, way := range []struct {
		name    string
		before  func()
		preview func(context.Context, string, segment.Rule, time.Time) (readmodels.SegmentPreview, error)
	}{
		{"go", func() {}, q.PreviewInGo},
		{"sql", func() { explain("the statement") }, q.PreviewInSQL},
		{"sql-with-window-indexes", func() {
			for _, ix := range windowIndexes {
				if _, err := pool.Exec(ctx, ix); err != nil {
					b.Fatal(err)
				}
			}
			if _, err := pool.Exec(ctx, `VACUUM ANALYZE segment_activity, segment_sales`); err != nil {
				b.Fatal(err)
			}
			explain("the statement with the window indexes")
		}, q.PreviewInSQL},
	} {
		b.Run(way.name, func(b *testing.B) {
			way.before()
			for range b.N {
				took := make([]time.Duration, previews)
				var answer string
				for i := range took {
					start := time.Now()
					p, err := way.preview(ctx, company, rule, at)
					if err != nil {
						b.Fatal(err)
					}
					took[i] = time.Since(start)
					answer = fmt.Sprintf("%d %s", p.Size, p.Sample)
				}
				answers = append(answers, answer)
				slices.Sort(took)
				p50[way.name] = took[previews/2-1]
				b.ReportMetric(took[previews/2-1].Seconds(), "p50-s")
				b.ReportMetric(took[previews*95/100-1].Seconds(), "p95-s")
				b.Logf("%s: %s; p50 %s, p95 %s, fastest %s, slowest %s", way.name, strings.SplitN(answer, " ", 2)[0]+" members",
					took[previews/2-1].Round(time.Millisecond), took[previews*95/100-1].Round(time.Millisecond),
					took[0].Round(time.Millisecond), took[previews-1].Round(time.Millisecond))
			}
		})
	}
	for _, a := range answers[1:] {
		if a != answers[0] {
			b.Errorf("the previews answer differently:\n%s\n%s", answers[0], a)
		}
	}
	for _, name := range []string{"sql", "sql-with-window-indexes"} {
		if p50[name] > 0 {
			b.Logf("p50: %s %.1f times faster than deciding in Go", name, p50["go"].Seconds()/p50[name].Seconds())
		}
	}
}

// insertPreviewMembers writes previewSegments, active, and their members
// at now, each segment after those it names, decided by the preview's
// statement (the same members as the backfill's: the statement answers
// as segment.Decide, TestPreviewInSQLSameAsInGo).
func insertPreviewMembers(tb testing.TB, ctx context.Context, tx pgx.Tx, company string, now time.Time) {
	tb.Helper()
	for _, r := range previewSegments {
		if _, err := tx.Exec(ctx, `INSERT INTO segment_rules (company_id, segment_key, rule, state) VALUES ($1, $2, $3, 'active')`,
			company, r[0], r[1]); err != nil {
			tb.Fatal(err)
		}
		rule, err := segment.ParseRule(json.RawMessage(r[1]))
		if err != nil {
			tb.Fatal(err)
		}
		_, sql, args, err := readmodels.PreviewStatement(company, rule, now)
		if err != nil {
			tb.Fatal(err)
		}
		args = append(args, r[0], now)
		tag, err := tx.Exec(ctx, fmt.Sprintf(`INSERT INTO segment_members (company_id, segment_key, customer_id, entered_at)
			SELECT $1, $%d::text, customer_id, $%d FROM (%s) d WHERE member IS NOT FALSE`, len(args)-1, len(args), sql), args...)
		if err != nil {
			tb.Fatal(err)
		}
		if tag.RowsAffected() == 0 {
			tb.Fatalf("segment %s has no member", r[0])
		}
	}
}

// previewSegments are 20 active segments of every kind of leaf, as
// BenchmarkBackfill's (projections/segments).
var previewSegments = [][2]string{
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
