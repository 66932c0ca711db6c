package readmodels

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/clientele/clientele/internal/pg/pgtest"
)

// TestCustomerIdentifierFilters checks that a filter on an identifier
// (email, phone_number, external_id, customer_token), which retrieval asks
// as doc ->> field = value, finds exactly what the containment filter
// every other field uses finds, page by page.
func TestCustomerIdentifierFilters(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	rows := []struct {
		company, id string
		deleted     bool
		doc         string
	}{
		{"co1", "01", false, `{"id": "01", "email": "ann@example.com", "phone_number": "+31612345678", "external_id": "123", "customer_token": "tok1"}`},
		// B kept its stored phone number when the key moved to A.
		{"co1", "02", false, `{"id": "02", "email": "bob@example.com", "phone_number": "+31612345678", "external_id": "b-2", "customer_token": "tok2"}`},
		{"co1", "03", false, `{"id": "03", "email": "a\"b\u00e9@example.com", "customer_token": "tok3"}`},
		{"co1", "04", true, `{"id": "04", "email": "ann@example.com", "phone_number": "+31612345678", "customer_token": "tok4"}`},
		{"co1", "05", false, `{"id": "05", "is_deleted": false, "is_forgotten": true}`},
		{"co1", "06", false, `{"id": "06", "email": "\ufffd@example.com", "phone_number": "+31612345678", "customer_token": "tok6"}`},
		{"co2", "07", false, `{"id": "07", "email": "ann@example.com", "phone_number": "+31612345678", "external_id": "123", "customer_token": "tok7"}`},
	}
	for _, r := range rows {
		_, err := pool.Exec(ctx, `INSERT INTO customers (company_id, customer_id, doc, is_deleted, version, created_at, updated_at)
			VALUES ($1, $2, $3, $4, 1, now(), now())`, r.company, r.id, r.doc, r.deleted)
		if err != nil {
			t.Fatal(err)
		}
	}
	contained := customersTable
	contained.stringIndexed = nil
	tests := []struct {
		name    string
		filters []Filter
		want    []string
	}{
		{"email", []Filter{{"email", "ann@example.com"}}, []string{"01"}},
		{"email exactly as stored", []Filter{{"email", "Ann@example.com"}}, []string{}},
		{"escaped characters", []Filter{{"email", "a\"b\u00e9@example.com"}}, []string{"03"}},
		{"phone number of several", []Filter{{"phone_number", "+31612345678"}}, []string{"01", "02", "06"}},
		{"digits are text", []Filter{{"external_id", "123"}}, []string{"01"}},
		{"customer_token", []Filter{{"customer_token", "tok2"}}, []string{"02"}},
		{"deleted is hidden", []Filter{{"customer_token", "tok4"}}, []string{}},
		{"two identifiers", []Filter{{"phone_number", "+31612345678"}, {"email", "bob@example.com"}}, []string{"02"}},
		{"identifier and another field", []Filter{{"phone_number", "+31612345678"}, {"id", "06"}}, []string{"06"}},
		{"same field twice", []Filter{{"email", "ann@example.com"}, {"email", "bob@example.com"}}, []string{}},
		{"empty value", []Filter{{"email", ""}}, []string{}},
		{"invalid UTF-8 is U+FFFD", []Filter{{"email", "\xff@example.com"}}, []string{"06"}},
		{"NUL matches nothing", []Filter{{"email", "ann@example.com\x00"}}, []string{}},
		{"quotes are data", []Filter{{"email", `ann@example.com' OR true --`}}, []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := allPages(ctx, customersTable, pool, tt.filters)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ids (-want +got):\n%s", diff)
			}
			if strings.ContainsRune(tt.filters[0].Value, 0) {
				return // jsonb refuses the containment document
			}
			scanned, err := allPages(ctx, contained, pool, tt.filters)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(scanned, got); diff != "" {
				t.Errorf("index-backed filter differs from containment (-containment +index):\n%s", diff)
			}
		})
	}
}

// allPages reads every page of a filtered retrieval of co1, one customer a
// page, so that the cursor is used too.
func allPages(ctx context.Context, table docTable, pool *pgxpool.Pool, filters []Filter) ([]string, error) {
	out := []string{}
	after := ""
	for {
		p, err := table.page(ctx, database{pool}, PageQuery{CompanyID: "co1", Filters: filters, After: after, Limit: 1})
		if err != nil {
			return nil, err
		}
		for _, d := range p.Docs {
			var doc struct{ ID string }
			if err := json.Unmarshal(d, &doc); err != nil {
				return nil, err
			}
			out = append(out, doc.ID)
		}
		if p.Next == "" {
			return out, nil
		}
		after = p.Next
	}
}

// TestCustomerIdentifierFiltersUseIndexes checks that PostgreSQL reads a
// page filtered by an identifier through its index (migration 00030), in
// a company large enough that a scan would cost: the plan, not a timing.
func TestCustomerIdentifierFiltersUseIndexes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	_, err := pool.Exec(ctx, `INSERT INTO customers (company_id, customer_id, doc, version, created_at, updated_at)
		SELECT 'co1', lpad(i::text, 8, '0'), jsonb_build_object('id', lpad(i::text, 8, '0'),
			'email', 'p' || i || '@example.com', 'phone_number', '+3161' || lpad(i::text, 7, '0'),
			'external_id', 'e-' || i, 'customer_token', md5(i::text), 'last_name', 'L' || i % 10), 1, now(), now()
		FROM generate_series(1, 5000) i`)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `ANALYZE customers`); err != nil {
		t.Fatal(err)
	}
	for field, value := range map[string]string{
		"email": "p42@example.com", "phone_number": "+31610000042", "external_id": "e-42", "customer_token": "a1d0c6e83f027327d8461063f4ac58a6",
	} {
		for _, after := range []string{"", "00000001"} {
			sql, args, err := customersTable.pageSQL(PageQuery{CompanyID: "co1", Filters: []Filter{{field, value}}, After: after, Limit: DefaultLimit})
			if err != nil {
				t.Fatal(err)
			}
			var plan string
			if err := pool.QueryRow(ctx, "EXPLAIN (FORMAT JSON) "+sql, args...).Scan(&plan); err != nil {
				t.Fatal(err)
			}
			if want := `"Index Name": "customers_` + field + `"`; !strings.Contains(plan, want) {
				t.Errorf("%s=%s after %q: plan without %s:\n%s", field, value, after, want, plan)
			}
		}
	}
}

// BenchmarkCustomerIdentifierFilter reads the first page of customers
// filtered by one customer's email in a company of 100,000, through the
// index ("index", what retrieval asks) and as the containment that every
// other field uses ("containment", what it asked before migration 00030):
// compare the two of one run.
func BenchmarkCustomerIdentifierFilter(b *testing.B) {
	ctx := context.Background()
	pool := pgtest.NewPool(b)
	fillBenchCustomers(ctx, b, pool, "")
	contained := customersTable
	contained.stringIndexed = nil
	q := PageQuery{CompanyID: "co1", Filters: []Filter{{"email", "p66666@example.com"}}, Limit: DefaultLimit}
	for _, bc := range []struct {
		name  string
		table docTable
	}{{"index", customersTable}, {"containment", contained}} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				p, err := bc.table.page(ctx, database{pool}, q)
				if err != nil {
					b.Fatal(err)
				}
				if len(p.Docs) != 1 {
					b.Fatalf("%d customers, want 1", len(p.Docs))
				}
			}
		})
	}
}

// fillBenchCustomers writes 100,000 customers of company co1, analysed,
// for the benchmarks of customer filters: identifiers unique, first names
// shared by a thousand each, but the last customer's, rare when not "".
func fillBenchCustomers(ctx context.Context, b *testing.B, pool *pgxpool.Pool, rare string) {
	b.Helper()
	_, err := pool.Exec(ctx, `INSERT INTO customers (company_id, customer_id, doc, version, created_at, updated_at)
		SELECT 'co1', lpad(i::text, 8, '0'), jsonb_build_object('id', lpad(i::text, 8, '0'),
			'email', 'p' || i || '@example.com', 'phone_number', '+3161' || lpad(i::text, 7, '0'),
			'external_id', 'e-' || i, 'customer_token', md5(i::text),
			'first_name', CASE WHEN i = 100000 AND $1 <> '' THEN $1 ELSE 'F' || i % 100 END,
			'last_name', 'L' || i % 1000, 'can_email', i % 2 = 0, 'tags', jsonb_build_array('t' || i % 10)), 1, now(), now()
		FROM generate_series(1, 100000) i`, rare)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `VACUUM ANALYZE customers`); err != nil {
		b.Fatal(err)
	}
}
