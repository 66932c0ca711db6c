package readmodels_test

import (
	"context"
	"encoding/json"
	"slices"
	"testing"

	"github.com/clientele/clientele/internal/pg/pgtest"
	"github.com/clientele/clientele/readmodels"
)

// TestCustomerSearch: a customer is found by a case-insensitive prefix of
// its email, external id, token or id, or of the words of its name
// (Ääkkönen by "ääk" and "ÄÄK"), never another company's nor a deleted
// one; the matches are counted, sorted and paged.
func TestCustomerSearch(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	rows := []struct {
		company, id string
		deleted     bool
		doc         string
	}{
		{"co1", "0a01", false, `{"first_name": "Liisa", "last_name": "Ääkkönen", "email": "liisa@example.com", "external_id": "EXT-1", "customer_token": "tok1"}`},
		{"co1", "0a02", false, `{"first_name": "Lisa", "last_name": "Berg", "email": "lisa.berg@example.com", "external_id": "ext-2"}`},
		{"co1", "0a03", false, `{"first_name": "Bob", "last_name": "Liisanen", "email": "bob@example.com"}`},
		{"co1", "0a04", true, `{"first_name": "Liisa", "last_name": "Deleted", "email": "liisa.d@example.com"}`},
		{"co1", "0b05", false, `{"first_name": "50%", "last_name": "o_k", "email": "pct@example.com"}`},
		{"co2", "0a06", false, `{"first_name": "Liisa", "last_name": "Other", "email": "liisa@example.com"}`},
	}
	for _, r := range rows {
		var doc map[string]any
		if err := json.Unmarshal([]byte(r.doc), &doc); err != nil {
			t.Fatal(err)
		}
		doc["id"] = r.id
		b, _ := json.Marshal(doc)
		if _, err := pool.Exec(ctx, `INSERT INTO customers (company_id, customer_id, doc, is_deleted, version, created_at, updated_at)
			VALUES ($1, $2, $3, $4, 1, now(), now())`, r.company, r.id, b, r.deleted); err != nil {
			t.Fatal(err)
		}
	}
	q := readmodels.NewCustomers(pool)
	ids := func(text, sort string, offset, limit int) ([]string, readmodels.CustomerMatches) {
		t.Helper()
		m, err := q.Search(ctx, readmodels.CustomerSearch{CompanyID: "co1", Text: text, Sort: sort, Offset: offset, Limit: limit})
		if err != nil {
			t.Fatalf("search %q: %v", text, err)
		}
		out := []string{}
		for _, d := range m.Docs {
			var doc struct{ ID string }
			if err := json.Unmarshal(d, &doc); err != nil {
				t.Fatal(err)
			}
			out = append(out, doc.ID)
		}
		return out, m
	}
	for _, c := range []struct {
		text string
		want []string
	}{
		{"liisa", []string{"0a01", "0a03"}},
		{"LIISA", []string{"0a01", "0a03"}},
		{"ääk", []string{"0a01"}},
		{"ÄÄKKÖNEN", []string{"0a01"}},
		{"liisa ää", []string{"0a01"}},
		{"liisa@", []string{"0a01"}},
		{"Liisa@Example", []string{"0a01"}},
		{"lisa.b", []string{"0a02"}},
		{"ext-", []string{"0a01", "0a02"}},
		{"EXT-", []string{"0a01", "0a02"}},
		{"tok1", []string{"0a01"}},
		{"0a0", []string{"0a01", "0a02", "0a03"}},
		{"0A02", []string{"0a02"}},
		{"isa", []string{}},
		{"50%", []string{"0b05"}},
		{"5%", []string{}},
		{"o_", []string{"0b05"}},
		{"deleted", []string{}},
		{"other", []string{}},
	} {
		got, m := ids(c.text, "oldest", 0, 10)
		if !slices.Equal(got, c.want) || m.Total != len(c.want) || m.AtLeast {
			t.Errorf("search %q: %v (total %d, at least %v), want %v", c.text, got, m.Total, m.AtLeast, c.want)
		}
	}
	// Sorted, paged, counted.
	if got, m := ids("", "name", 0, 2); !slices.Equal(got, []string{"0b05", "0a03"}) || m.Total != 4 {
		t.Errorf("every customer by name, first page: %v of %d", got, m.Total)
	}
	if got, _ := ids("", "name", 2, 2); !slices.Equal(got, []string{"0a01", "0a02"}) {
		t.Errorf("every customer by name, second page: %v", got)
	}
	if got, _ := ids("", "newest", 0, 10); !slices.Equal(got, []string{"0b05", "0a03", "0a02", "0a01"}) {
		t.Errorf("newest first: %v", got)
	}
	if got, _ := ids("", "email", 0, 10); !slices.Equal(got, []string{"0a03", "0a01", "0a02", "0b05"}) {
		t.Errorf("by email: %v", got)
	}
	if got, _ := ids("liisa", "name", 5, 10); len(got) != 0 {
		t.Errorf("past the matches: %v", got)
	}
}

// TestCustomerSearchBounded: past SearchMaxMatches matches a search says
// "at least"; a name among customers older than the newest SearchMaxScan
// is not read, and the search says it may have missed some, while an
// email is found through its index wherever it is.
func TestCustomerSearchBounded(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	n := readmodels.SearchMaxScan + 10
	if _, err := pool.Exec(ctx, `INSERT INTO customers (company_id, customer_id, doc, is_deleted, version, created_at, updated_at)
		SELECT 'co1', lpad(to_hex(i), 8, '0'), jsonb_build_object('id', lpad(to_hex(i), 8, '0'), 'first_name', 'Many',
			'email', 'many' || i || '@example.com'), false, 1, now(), now() FROM generate_series(1, $1) i`, n); err != nil {
		t.Fatal(err)
	}
	// The oldest customer has a rare name and a rare email.
	if _, err := pool.Exec(ctx, `UPDATE customers SET doc = doc || '{"first_name": "Rare", "email": "rare@example.com"}' WHERE customer_id = '00000001'`); err != nil {
		t.Fatal(err)
	}
	q := readmodels.NewCustomers(pool)
	search := func(text string) readmodels.CustomerMatches {
		m, err := q.Search(ctx, readmodels.CustomerSearch{CompanyID: "co1", Text: text, Limit: 50})
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	if m := search("many"); m.Total != readmodels.SearchMaxMatches || !m.AtLeast || len(m.Docs) != 50 {
		t.Errorf("a search of every customer: %d, at least %v, %d on the page", m.Total, m.AtLeast, len(m.Docs))
	}
	if m := search(""); m.Total != readmodels.SearchMaxMatches || !m.AtLeast {
		t.Errorf("every customer: %d, at least %v", m.Total, m.AtLeast)
	}
	if m := search("rare"); m.Total != 1 || !m.AtLeast {
		t.Errorf("the oldest customer's email prefix: %d, at least %v: want it found through the index, and the scan bound said", m.Total, m.AtLeast)
	}
	if m := search("rare@"); m.Total != 1 {
		t.Errorf("the oldest customer's email: %d", m.Total)
	}
}
