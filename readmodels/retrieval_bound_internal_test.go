package readmodels

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/clientele/clientele/internal/pg/pgtest"
)

// boundFixture writes co1's customers 01 to 30 (10 deleted), the rare
// first name Rare on 03, 07, 08, 10 (deleted), 15, 29 and 30, an email
// on 29, and co2's customer 31 named Rare too.
func boundFixture(t testing.TB, pool *pgxpool.Pool) {
	t.Helper()
	_, err := pool.Exec(context.Background(), `INSERT INTO customers (company_id, customer_id, doc, is_deleted, version, created_at, updated_at)
		SELECT CASE WHEN i = 31 THEN 'co2' ELSE 'co1' END, lpad(i::text, 2, '0'),
			jsonb_build_object('id', lpad(i::text, 2, '0'),
				'first_name', CASE WHEN i IN (3, 7, 8, 10, 15, 29, 30, 31) THEN 'Rare' ELSE 'Common' END)
			|| CASE WHEN i = 29 THEN '{"email": "rare@example.com"}'::jsonb ELSE '{}' END,
			i = 10, 1, now(), now()
		FROM generate_series(1, 31) i`)
	if err != nil {
		t.Fatal(err)
	}
}

// pageIDs are the ids of a page's documents.
func pageIDs(t testing.TB, p Page) []string {
	t.Helper()
	out := []string{}
	for _, d := range p.Docs {
		var doc struct{ ID string }
		if err := json.Unmarshal(d, &doc); err != nil {
			t.Fatal(err)
		}
		out = append(out, doc.ID)
	}
	return out
}

// TestCustomersScanBound reads co1's customers named Rare under a scan
// bound: a page stops at the bound with the matches it found and the
// last row it read as its cursor, a full page stops at its last match,
// and following the cursors finds every match once, in order, whatever
// the page size and the bound.
func TestCustomersScanBound(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	boundFixture(t, pool)
	rare := []Filter{{"first_name", "Rare"}}
	type page struct {
		IDs         []string
		Next        string
		ScanBounded bool
		Scanned     int
	}
	for _, tt := range []struct {
		name string
		q    PageQuery
		want page
	}{
		// 01 to 05: one match; the next page starts after 05.
		{"stopped by the bound", PageQuery{Filters: rare, Limit: 2, MaxScan: 5},
			page{IDs: []string{"03"}, Next: "05", ScanBounded: true, Scanned: 5}},
		{"no match within the bound", PageQuery{Filters: rare, After: "15", Limit: 2, MaxScan: 5},
			page{IDs: []string{}, Next: "20", ScanBounded: true, Scanned: 5}},
		// 01 to 09, then 11 (10 is deleted): the page is full at 07.
		{"full before the bound", PageQuery{Filters: rare, Limit: 2, MaxScan: 10},
			page{IDs: []string{"03", "07"}, Next: "07", Scanned: 7}},
		// 01 to 08: the two matches fill the page, and more rows follow.
		{"full at the bound", PageQuery{Filters: rare, Limit: 2, MaxScan: 8},
			page{IDs: []string{"03", "07"}, Next: "07", Scanned: 7}},
		{"a page's worth of matches at the bound", PageQuery{Filters: rare, After: "03", Limit: 2, MaxScan: 5},
			page{IDs: []string{"07", "08"}, Next: "08", Scanned: 5}},
		// 26 to 30 are the last rows: the last page, not a bounded one.
		{"the company ends at the bound", PageQuery{Filters: rare, After: "25", Limit: 2, MaxScan: 5},
			page{IDs: []string{"29", "30"}}},
		{"the company ends before the bound", PageQuery{Filters: rare, After: "25", Limit: 5, MaxScan: 50},
			page{IDs: []string{"29", "30"}}},
		{"the matching rows of another company are not read", PageQuery{Filters: rare, After: "29", Limit: 5, MaxScan: 1},
			page{IDs: []string{"30"}}},
		{"an indexed filter reads its index, not up to the bound", PageQuery{Filters: []Filter{{"email", "rare@example.com"}}, Limit: 2, MaxScan: 1},
			page{IDs: []string{"29"}}},
		{"without filters every row matches", PageQuery{Limit: 2, MaxScan: 1},
			page{IDs: []string{"01", "02"}, Next: "02"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tt.q.CompanyID = "co1"
			p, err := customersTable.page(ctx, database{pool}, tt.q)
			if err != nil {
				t.Fatal(err)
			}
			got := page{IDs: pageIDs(t, p), Next: p.Next, ScanBounded: p.ScanBounded, Scanned: p.Scanned}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("page (-want +got):\n%s", diff)
			}
		})
	}

	want, err := allPages(ctx, customersTable, pool, rare)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"03", "07", "08", "15", "29", "30"}, want); diff != "" {
		t.Fatalf("unbounded (-want +got):\n%s", diff)
	}
	for limit := 1; limit <= 3; limit++ {
		for bound := 1; bound <= 8; bound++ {
			t.Run(fmt.Sprintf("limit %d bound %d", limit, bound), func(t *testing.T) {
				got := []string{}
				after := ""
				for pages := 0; ; pages++ {
					if pages > 40 {
						t.Fatal("no end after 40 pages")
					}
					p, err := customersTable.page(ctx, database{pool}, PageQuery{CompanyID: "co1", Filters: rare, After: after, Limit: limit, MaxScan: bound})
					if err != nil {
						t.Fatal(err)
					}
					if len(p.Docs) > limit || p.Scanned > bound || (p.ScanBounded && len(p.Docs) >= limit) {
						t.Fatalf("after %q: %d docs, scanned %d, bounded %v", after, len(p.Docs), p.Scanned, p.ScanBounded)
					}
					got = append(got, pageIDs(t, p)...)
					if p.Next == "" {
						break
					}
					if p.Next <= after {
						t.Fatalf("after %q: next %q goes back", after, p.Next)
					}
					after = p.Next
				}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("matches across continuations (-unbounded +bounded):\n%s", diff)
				}
			})
		}
	}
}

// TestEventsScanBound checks the bound on a table of integer ids: the
// rank and the cursor follow the numeric order (9 before 10).
func TestEventsScanBound(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	_, err := pool.Exec(ctx, `INSERT INTO activity_events (company_id, event_id, customer_id, doc, version, created_at, updated_at)
		SELECT 'co1', i, 'c', jsonb_build_object('id', i, 'type', CASE WHEN i IN (4, 12) THEN 'MAIL_OPEN' ELSE 'BROWSE' END), 1, now(), now()
		FROM generate_series(1, 12) i`)
	if err != nil {
		t.Fatal(err)
	}
	q := PageQuery{CompanyID: "co1", Filters: []Filter{{"type", "MAIL_OPEN"}}, Limit: 5, MaxScan: 9}
	p, err := eventsTable.page(ctx, database{pool}, q)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Docs) != 1 || p.Next != "9" || !p.ScanBounded {
		t.Fatalf("first page: %d docs, next %q, bounded %v; want 1, 9, true", len(p.Docs), p.Next, p.ScanBounded)
	}
	q.After = p.Next
	if p, err = eventsTable.page(ctx, database{pool}, q); err != nil {
		t.Fatal(err)
	}
	if len(p.Docs) != 1 || !strings.Contains(string(p.Docs[0]), `"id": 12`) || p.Next != "" {
		t.Fatalf("second page: %s, next %q; want event 12 and the end", p.Docs, p.Next)
	}
}

// TestScanBoundPlan checks that a bounded page is read by scans of the
// primary key in id order, stopped by the bound: no scan of the whole
// table, and no sort but of the page's few matches.
func TestScanBoundPlan(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	_, err := pool.Exec(ctx, `INSERT INTO customers (company_id, customer_id, doc, version, created_at, updated_at)
		SELECT 'co1', lpad(i::text, 8, '0'), jsonb_build_object('id', lpad(i::text, 8, '0'), 'first_name', 'F' || i % 100), 1, now(), now()
		FROM generate_series(1, 20000) i`)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `ANALYZE customers`); err != nil {
		t.Fatal(err)
	}
	for _, after := range []string{"", "00000100"} {
		sql, args, err := customersTable.boundedSQL(PageQuery{CompanyID: "co1", Filters: []Filter{{"first_name", "nobody"}},
			After: after, Limit: 50, MaxScan: 5000})
		if err != nil {
			t.Fatal(err)
		}
		var plan []struct{ Plan planNode }
		if err := pool.QueryRow(ctx, "EXPLAIN (FORMAT JSON) "+sql, args...).Scan(&plan); err != nil {
			t.Fatal(err)
		}
		scans := 0
		var walk func(n planNode, sorted bool)
		walk = func(n planNode, sorted bool) {
			switch {
			case n.RelationName == "customers" && (n.IndexName != "customers_pkey" || sorted):
				t.Errorf("after %q: %s of customers (index %q) under a sort: %v", after, n.NodeType, n.IndexName, sorted)
			case n.RelationName == "customers":
				scans++
			}
			for _, c := range n.Plans {
				walk(c, sorted || n.NodeType == "Sort")
			}
		}
		walk(plan[0].Plan, false)
		if scans != 3 {
			t.Errorf("after %q: %d scans of customers_pkey, want 3 (the matches, the bound, the count)", after, scans)
		}
	}
}

// planNode is a node of EXPLAIN (FORMAT JSON).
type planNode struct {
	NodeType     string `json:"Node Type"`
	RelationName string `json:"Relation Name"`
	IndexName    string `json:"Index Name"`
	Plans        []planNode
}

// BenchmarkCustomerScanBound reads the first page of customers filtered
// by a first name that one customer of 100,000 has (the last created),
// as retrieval reads it ("unbounded": the whole company is read) and as
// the console reads it, under a bound of 50,000 rows ("bounded 50000":
// half the company, then a page stopped at the bound), with, for scale,
// a filter that half the company meets ("common, bounded": the page is
// full at once).
func BenchmarkCustomerScanBound(b *testing.B) {
	ctx := context.Background()
	pool := pgtest.NewPool(b)
	fillBenchCustomers(ctx, b, pool, "Rare")
	rare := []Filter{{"first_name", "Rare"}}
	for _, bc := range []struct {
		name string
		q    PageQuery
		docs int
	}{
		{"unbounded", PageQuery{Filters: rare}, 1},
		{"bounded 50000", PageQuery{Filters: rare, MaxScan: 50_000}, 0},
		{"common, bounded", PageQuery{Filters: []Filter{{"can_email", "true"}}, MaxScan: 50_000}, 50},
	} {
		b.Run(bc.name, func(b *testing.B) {
			q := bc.q
			q.CompanyID, q.Limit = "co1", 50
			for b.Loop() {
				p, err := customersTable.page(ctx, database{pool}, q)
				if err != nil {
					b.Fatal(err)
				}
				if len(p.Docs) != bc.docs {
					b.Fatalf("%d customers, want %d", len(p.Docs), bc.docs)
				}
			}
		})
	}
}
