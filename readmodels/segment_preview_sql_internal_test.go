package readmodels

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/clientele/clientele/domain/segment"
	"github.com/clientele/clientele/internal/pg/pgtest"
)

// previewNow is the instant the differential tests decide at: with
// nanoseconds, so that the windows' edges fall between microseconds.
var previewNow = time.Date(2026, 3, 15, 12, 0, 0, 123_456_789, time.UTC)

// awkwardValues are the values of customers' and events' fields: every
// JSON type, numbers as strings, mixed case and letters beyond ASCII
// whose case folds (the Kelvin sign, a dotted capital I, ß), dates in
// every form instant reads and some it does not, at a window's edges,
// numbers beyond a double's range and below its least, lists empty,
// mixed and nested.
func awkwardValues(now time.Time) []string {
	edge := func(d time.Duration) string {
		return fmt.Sprintf("%q", now.Add(d).Truncate(time.Microsecond).Format("2006-01-02T15:04:05.999999Z07:00"))
	}
	week := 7 * 24 * time.Hour
	return []string{
		`"Helsinki"`, `"HELSINKI"`, `"helsinki "`, `"Åbo"`, `"åBO"`, `"İstanbul"`, `"\u212Aelvin"`, `"kelvin"`, `"Straße"`,
		`"STRASSE"`, `""`, `"vip"`, `"VIP"`, `"30"`, `"true"`, `"cart"`, `"Cart"`, `"日本"`, `"ǅ"`, `"ǆ"`,
		`30`, `30.0`, `30.5`, `-0`, `0`, `1e-400`, `1e400`, `1.7976931348623157e308`, `1.7976931348623159e308`,
		`4.9e-324`, `2e-324`, `12345678901234567890`, `12345678901234567891`, `0.1`, `0.30000000000000004`, `-12`,
		`true`, `false`, `null`, `{"a": 1}`, `[]`, `["vip", "A"]`, `[1, "1", null, true]`, `[["vip"]]`, `[{"a": "vip"}]`,
		`["VIP", 30.0]`, `[0.1, "Helsinki"]`,
		`"2026-03-15"`, `"2026-03-08"`, `"2026-03-15T12:00:00Z"`, `"2026-03-15T12:00:00.123456Z"`, `"2026-03-15T12:00:00.123457Z"`,
		`"2026-03-15T14:00:00+02:00"`, `"2026-03-15T10:00:00-02:00"`, `"2026-03-15 12:00:00"`, `"2026-03-15 12:00:00.5"`,
		`"2026-03-15T12:00:00"`, `"2026-03-08T12:00:00.123456789Z"`, `"2026-03-08T12:00:00+24:00"`, `"2026-02-30"`,
		`"2024-02-29"`, `"2023-02-29"`, `"2026-03-15T23:59:60Z"`, `"2026-03-15T1:00:00Z"`, `"2026-03-15t12:00:00z"`,
		`"0000-01-01"`, `"2026-03-15 12:00:00Z"`, `"not a date"`, `"2026-13-01"`, `"2026-03-15T12:00:00,5Z"`, `20260315`,
		`"2026-03-15T12:00:00+23:59"`, `"9999-12-31T23:59:59.999999Z"`, `"1000-01-01"`,
		edge(-week), edge(-week + time.Microsecond), edge(-week - time.Microsecond), edge(0), edge(time.Microsecond),
		edge(-24 * time.Hour), edge(-30 * 24 * time.Hour), edge(time.Hour),
	}
}

// ruleValues are the values rules compare with.
var ruleValues = []string{
	`"Helsinki"`, `"helsinki"`, `"åbo"`, `"ÅBO"`, `"i̇stanbul"`, `"istanbul"`, `"kelvin"`, `"K"`, `"k"`, `"straße"`, `"ss"`,
	`"vip"`, `"VIP"`, `""`, `"30"`, `"cart"`, `"日本"`, `"ǆ"`, `"Ǆ"`,
	`30`, `30.000000000000001`, `0.1`, `0`, `1e-400`, `1.7976931348623157e308`, `12345678901234567890`, `-12`, `4.9e-324`,
	`true`, `false`, `null`,
	`"2026-03-15"`, `"2026-03-08T12:00:00.123456789Z"`, `"2026-03-08T12:00:00.1234567Z"`, `"2026-03-15T12:00:00Z"`,
	`"2026-03-15T12:00:00+02:00"`, `"2024-02-29"`,
}

// previewFields are the customers' and events' fields rules read.
var previewFields = []string{"city", "age", "tags", "signup", "flag", "label", "absent"}

// insertAwkwardFacts writes n generated customers of company into the
// membership facts, with events, sales and memberships of segments s1
// and s2.
func insertAwkwardFacts(t testing.TB, pool *pgxpool.Pool, company string, n int, rnd *rand.Rand) {
	t.Helper()
	ctx := context.Background()
	values := awkwardValues(previewNow)
	doc := func(id string) string {
		var parts []string
		if id != "" {
			parts = append(parts, fmt.Sprintf(`"id": %q`, id))
		}
		for _, f := range previewFields {
			if f != "absent" && rnd.IntN(5) > 0 {
				parts = append(parts, fmt.Sprintf("%q: %s", f, values[rnd.IntN(len(values))]))
			}
		}
		return "{" + strings.Join(parts, ", ") + "}"
	}
	instants := []time.Duration{0, time.Microsecond, -time.Microsecond, -time.Hour, -24 * time.Hour, -7 * 24 * time.Hour,
		-7*24*time.Hour + time.Microsecond, -7*24*time.Hour - time.Microsecond, -30 * 24 * time.Hour,
		-30*24*time.Hour + time.Microsecond, -400 * 24 * time.Hour, time.Hour}
	at := func() time.Time { return previewNow.Add(instants[rnd.IntN(len(instants))]).Truncate(time.Microsecond) }
	revenues := []int64{0, 100, 5000, -3000, 1 << 62, 1<<63 - 1, -1 << 63}
	products := []string{"{}", "{P1}", "{P1,P2}", "{p1}", "{P2}"}
	var event int
	for i := range n {
		id := fmt.Sprintf("c%04d", i)
		if _, err := pool.Exec(ctx, `INSERT INTO segment_customers (company_id, customer_id, doc) VALUES ($1, $2, $3::text::jsonb)`,
			company, id, doc(id)); err != nil {
			t.Fatal(err)
		}
		for range rnd.IntN(6) {
			event++
			typ := []string{"BROWSE", "OPEN", "browse"}[rnd.IntN(3)]
			if _, err := pool.Exec(ctx, `INSERT INTO segment_activity (company_id, event_id, customer_id, type, at, fields)
				VALUES ($1, $2, $3, $4, $5, $6::text::jsonb)`, company, event, id, typ, at(), doc("")); err != nil {
				t.Fatal(err)
			}
		}
		for k := range rnd.IntN(4) {
			var when *time.Time
			if rnd.IntN(6) > 0 {
				w := at()
				when = &w
			}
			if _, err := pool.Exec(ctx, `INSERT INTO segment_sales (company_id, sale_id, customer_id, at, revenue, products, counted)
				VALUES ($1, $2, $3, $4, $5, $6::text::text[], $7)`, company, fmt.Sprintf("%s-%d", id, k), id, when,
				revenues[rnd.IntN(len(revenues))], products[rnd.IntN(len(products))], rnd.IntN(5) > 0); err != nil {
				t.Fatal(err)
			}
		}
		for _, key := range []string{"s1", "s2"} {
			if rnd.IntN(3) == 0 {
				if _, err := pool.Exec(ctx, `INSERT INTO segment_members (company_id, segment_key, customer_id, entered_at)
					VALUES ($1, $2, $3, now())`, company, key, id); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	// Events and sales of a customer without a document count for no one.
	if _, err := pool.Exec(ctx, `INSERT INTO segment_activity (company_id, event_id, customer_id, type, at, fields)
		VALUES ($1, 0, 'gone', 'BROWSE', $2, '{}')`, company, previewNow.Add(-time.Hour)); err != nil {
		t.Fatal(err)
	}
}

// ruleGen generates rules of every kind of leaf, nested in all, any and
// not, from a source of choices.
type ruleGen struct {
	pick func(n int) int
}

func (g ruleGen) value() string { return ruleValues[g.pick(len(ruleValues))] }

func (g ruleGen) field(fields []string, windows bool) string {
	f := fmt.Sprintf("%q", fields[g.pick(len(fields))])
	ops := []string{"eq", "ne", "in", "contains", "exists", "gt", "gte", "lt", "lte", "within_days", "not_within_days"}
	if !windows {
		ops = ops[:9]
	}
	switch op := ops[g.pick(len(ops))]; op {
	case "exists":
		return fmt.Sprintf(`{"field": %s, "exists": %v}`, f, g.pick(2) == 0)
	case "in":
		vs := make([]string, 1+g.pick(4))
		for i := range vs {
			vs[i] = g.value()
		}
		return fmt.Sprintf(`{"field": %s, "in": [%s]}`, f, strings.Join(vs, ", "))
	case "within_days", "not_within_days":
		return fmt.Sprintf(`{"field": %s, %q: %d}`, f, op, []int{1, 7, 30}[g.pick(3)])
	default:
		return fmt.Sprintf(`{"field": %s, %q: %s}`, f, op, g.value())
	}
}

func (g ruleGen) leaf() string {
	days := []string{"", `, "within_days": 1`, `, "within_days": 7`, `, "within_days": 30`}
	counts := []string{"", `, "min_count": 1`, `, "min_count": 2`, `, "min_count": 3`}
	switch g.pick(5) {
	case 0, 1:
		return g.field(previewFields, true)
	case 2:
		var where []string
		for range g.pick(3) {
			where = append(where, g.field(previewFields, false))
		}
		w := ""
		if len(where) > 0 {
			w = `, "where": [` + strings.Join(where, ", ") + `]`
		}
		typ := []string{"BROWSE", "OPEN", "browse", "CLICK"}[g.pick(4)]
		return fmt.Sprintf(`{"event": {"type": %q%s%s%s}}`, typ, w, days[g.pick(len(days))], counts[g.pick(len(counts))])
	case 3:
		revenue := []string{"", `, "min_revenue": 0`, `, "min_revenue": 100`, `, "min_revenue": 5000`}[g.pick(4)]
		product := []string{"", `, "product_id": "P1"`, `, "product_id": "p1"`}[g.pick(3)]
		body := strings.TrimPrefix(days[g.pick(len(days))]+counts[g.pick(len(counts))]+revenue+product, ", ")
		return `{"sales": {` + body + `}}`
	}
	return fmt.Sprintf(`{"segment": %q}`, []string{"s1", "s2", "s3"}[g.pick(3)])
}

func (g ruleGen) rule(depth int) string {
	if depth >= 3 || g.pick(3) == 0 {
		return g.leaf()
	}
	switch g.pick(3) {
	case 0:
		return `{"not": ` + g.rule(depth+1) + `}`
	case 1:
		subs := make([]string, 1+g.pick(3))
		for i := range subs {
			subs[i] = g.rule(depth + 1)
		}
		return `{"all": [` + strings.Join(subs, ", ") + `]}`
	}
	subs := make([]string, 1+g.pick(3))
	for i := range subs {
		subs[i] = g.rule(depth + 1)
	}
	return `{"any": [` + strings.Join(subs, ", ") + `]}`
}

// previewBothWays answers the preview of rule in SQL and in Go, and
// fails the test when they differ; it reports whether SQL decided it
// (false: the rule fell back to Go).
func previewBothWays(t testing.TB, q *Segments, company string, rule segment.Rule, text string) (SegmentPreview, bool) {
	t.Helper()
	ctx := context.Background()
	want, err := q.previewInGo(ctx, company, rule, previewNow)
	if err != nil {
		t.Fatalf("%s: in Go: %v", text, err)
	}
	got, err := q.previewInSQL(ctx, company, rule, previewNow, previewUnknown)
	if errors.Is(err, errPreviewUnknown) {
		return want, false
	}
	if err != nil {
		t.Fatalf("%s: in SQL: %v", text, err)
	}
	if diff := cmp.Diff(fmt.Sprintf("%d %s", want.Size, want.Sample), fmt.Sprintf("%d %s", got.Size, got.Sample)); diff != "" {
		t.Errorf("%s: Go (-) and SQL (+) differ:\n%s", text, diff)
	}
	return want, true
}

// TestPreviewInSQLSameAsInGo: over 600 generated customers with awkward
// values (awkwardValues), their events and sales, the preview decided in
// one statement answers the size and sample that segment.Decide answers,
// for every leaf alone on every field and generated rules nesting every
// kind of leaf in all, any and not.
func TestPreviewInSQLSameAsInGo(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	rnd := rand.New(rand.NewPCG(28, 1))
	insertAwkwardFacts(t, pool, "co", 600, rnd)
	q := NewSegments(pool)
	var rules []string
	// Every operator on every field with every value.
	for _, f := range previewFields {
		for _, v := range ruleValues {
			for _, op := range []string{"eq", "ne", "contains", "gt", "gte", "lt", "lte"} {
				rules = append(rules, fmt.Sprintf(`{"field": %q, %q: %s}`, f, op, v))
			}
			rules = append(rules, fmt.Sprintf(`{"event": {"type": "BROWSE", "where": [{"field": %q, "eq": %s}]}}`, f, v))
		}
		rules = append(rules, fmt.Sprintf(`{"field": %q, "in": [%s]}`, f, strings.Join(ruleValues, ", ")))
		for _, op := range []string{"within_days", "not_within_days"} {
			for _, d := range []int{1, 7, 30} {
				rules = append(rules, fmt.Sprintf(`{"field": %q, %q: %d}`, f, op, d))
			}
		}
		rules = append(rules, fmt.Sprintf(`{"field": %q, "exists": true}`, f), fmt.Sprintf(`{"not": {"field": %q, "exists": false}}`, f))
	}
	g := ruleGen{pick: rnd.IntN}
	for range 400 {
		rules = append(rules, g.rule(0))
	}
	var compared, members, unknown int
	for _, text := range rules {
		rule, err := segment.ParseRule(json.RawMessage(text))
		if err != nil {
			continue
		}
		p, inSQL := previewBothWays(t, q, "co", rule, text)
		if !inSQL {
			unknown++
			continue
		}
		compared++
		if p.Size > 0 && p.Size < 600 {
			members++
		}
	}
	t.Logf("%d rules compared (%d with some but not all members), %d decided in Go", compared, members, unknown)
	if compared < len(rules)/2 || members < compared/4 {
		t.Errorf("%d rules compared, %d with some but not all members, of %d: the rules test little", compared, members, len(rules))
	}
}

// TestPreviewFallsBackToGo: a rule the statement leaves unknown for
// more customers than its bound (dates written with an offset of 24
// hours, which it does not read) is given up, and the preview of a
// company with a segment answers it with segment.Decide, as the
// reference does; within the bound the statement answers it, those
// customers decided by segment.Decide.
func TestPreviewFallsBackToGo(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	q := NewSegments(pool)
	insertSignups(t, pool)
	for _, c := range []struct {
		rule       string
		maxUnknown int
		fallsBack  error
		size       int64
	}{
		{`{"field": "signup", "within_days": 7}`, previewUnknown, nil, 3},
		{`{"field": "signup", "within_days": 7}`, 1, errPreviewUnknown, 3},
		{`{"field": "signup", "within_days": 7}`, 2, nil, 3},
		{`{"any": [{"field": "signup", "within_days": 7}, {"field": "city", "eq": "a"}]}`, 0, nil, 4},
	} {
		rule, err := segment.ParseRule(json.RawMessage(c.rule))
		if err != nil {
			t.Fatal(err)
		}
		_, err = q.previewInSQL(ctx, "co", rule, previewNow, c.maxUnknown)
		if !errors.Is(err, c.fallsBack) {
			t.Errorf("%s, at most %d unknown: %v, want %v", c.rule, c.maxUnknown, err, c.fallsBack)
		}
		want, err := q.previewInGo(ctx, "co", rule, previewNow)
		if err != nil {
			t.Fatal(err)
		}
		got, err := q.Preview(ctx, "co", rule, previewNow)
		if err != nil {
			t.Fatal(err)
		}
		if want.Size != c.size || got.Size != c.size {
			t.Errorf("%s: %d in Go, %d previewed, want %d", c.rule, want.Size, got.Size, c.size)
		}
		if diff := cmp.Diff(fmt.Sprint(want.Sample), fmt.Sprint(got.Sample)); diff != "" {
			t.Errorf("%s: the sample (-in Go +previewed):\n%s", c.rule, diff)
		}
	}
}

// insertSignups writes four customers of company co, two with a signup
// written with an offset of 24 hours, and a segment, so that its preview
// reads the membership facts.
func insertSignups(t *testing.T, pool *pgxpool.Pool) {
	t.Helper()
	ctx := context.Background()
	for i, signup := range []string{"2026-03-10T12:00:00+24:00", "2026-03-10T12:00:00Z", "2026-03-10T12:00:00+24:00", "2026-01-01"} {
		if _, err := pool.Exec(ctx, `INSERT INTO segment_customers (company_id, customer_id, doc)
			VALUES ('co', $1, jsonb_build_object('id', $1::text, 'signup', $2::text, 'city', 'a', 'tags', '["a"]'::jsonb))`,
			fmt.Sprintf("c%d", i), signup); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := pool.Exec(ctx, `INSERT INTO segment_activity (company_id, event_id, customer_id, type, at, fields)
		VALUES ('co', 1, 'c1', 'A', $1, '{"label": "a"}')`, previewNow.Add(-time.Hour)); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO segment_sales (company_id, sale_id, customer_id, at, revenue, products, counted)
		VALUES ('co', 's1', 'c1', $1, 100, '{P}', true)`, previewNow.Add(-time.Hour)); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO segment_rules (company_id, segment_key, rule, state) VALUES ('co', 'other', '{"field":"city","eq":"x"}', 'active')`); err != nil {
		t.Fatal(err)
	}
}

// TestPreviewOfTextNoFactHolds: a rule's string holding U+0000 cannot be
// sent to PostgreSQL, whose text cannot hold it, so no fact holds it: a
// field of that name is absent, no event has that type or field, no
// sale that product, no value equals or contains it. The statement
// decides such rules so, as segment.Decide does on the facts.
func TestPreviewOfTextNoFactHolds(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	q := NewSegments(pool)
	insertSignups(t, pool)
	for _, c := range []struct {
		rule string
		size int64
	}{
		{`{"field": "city", "ne": "a\u0000"}`, 4},
		{`{"field": "city", "in": ["a\u0000", "a"]}`, 4},
		{`{"field": "city", "contains": "\u0000"}`, 0},
		{`{"field": "tags", "contains": "a\u0000"}`, 0},
		{`{"field": "tags", "eq": "a\u0000"}`, 0},
		{`{"field": "ci\u0000ty", "exists": false}`, 4},
		{`{"field": "ci\u0000ty", "ne": "a"}`, 4},
		{`{"event": {"type": "A\u0000"}}`, 0},
		{`{"event": {"type": "A", "where": [{"field": "la\u0000bel", "exists": false}]}}`, 1},
		{`{"not": {"sales": {"product_id": "P\u0000"}}}`, 4},
		{`{"sales": {"product_id": "P"}}`, 1},
	} {
		rule, err := segment.ParseRule(json.RawMessage(c.rule))
		if err != nil {
			t.Fatal(err)
		}
		got, err := q.previewInSQL(ctx, "co", rule, previewNow, previewUnknown)
		if err != nil {
			t.Fatal(err)
		}
		if got.Size != c.size {
			t.Errorf("%s: %d members, want %d", c.rule, got.Size, c.size)
		}
	}
}

// FuzzPreviewInSQL: rules generated from the fuzzer's bytes (each byte a
// choice of ruleGen) are previewed in SQL and in Go over 200 generated
// customers with awkward values, and answer the same.
//
//	go test -run '^$' -fuzz '^FuzzPreviewInSQL$' -fuzztime 30s ./readmodels/
func FuzzPreviewInSQL(f *testing.F) {
	pool := pgtest.NewPool(f)
	insertAwkwardFacts(f, pool, "co", 200, rand.New(rand.NewPCG(28, 2)))
	q := NewSegments(pool)
	f.Add([]byte{})
	f.Add([]byte{1, 1, 2, 0, 3, 5, 4, 2, 9, 0, 1, 3, 3, 7, 2})
	f.Add([]byte{1, 2, 1, 2, 2, 1, 0, 0, 1, 4, 0, 6, 1, 3, 2, 8, 1, 1})
	f.Add([]byte("all of them, any of them, not these"))
	f.Fuzz(func(t *testing.T, choices []byte) {
		g := ruleGen{pick: func(n int) int {
			if len(choices) == 0 {
				return 0
			}
			b := choices[0]
			choices = choices[1:]
			return int(b) % n
		}}
		text := g.rule(0)
		rule, err := segment.ParseRule(json.RawMessage(text))
		if err != nil {
			return
		}
		previewBothWays(t, q, "co", rule, text)
	})
}

// TestPreviewInGoOfAFailedRead: a read of the facts that PostgreSQL
// refuses (an event type holding U+0000, which its text cannot hold) is
// an error of the preview in Go, not a panic on the failed query's rows
// that left its connection held (and serve unable to stop).
func TestPreviewInGoOfAFailedRead(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pool := pgtest.NewPool(t)
	q := NewSegments(pool)
	insertSignups(t, pool)
	rule, err := segment.ParseRule(json.RawMessage(`{"event": {"type": "A\u0000"}}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := q.previewInGo(ctx, "co", rule, previewNow); err == nil {
		t.Fatal("the preview in Go read events of a type PostgreSQL cannot hold, and answered no error")
	}
	if ctx.Err() != nil {
		t.Fatal("the preview in Go did not end")
	}
	if n := pool.Stat().AcquiredConns(); n != 0 {
		t.Fatalf("%d connections still held after the preview", n)
	}
}
