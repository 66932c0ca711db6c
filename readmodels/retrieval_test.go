package readmodels_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/clientele/clientele/internal/pg/pgtest"
	"github.com/clientele/clientele/readmodels"
)

// TestRetrieveFilters runs the retrieval query on customers rows written
// directly, covering how query-string values match typed JSON values.
func TestRetrieveFilters(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	rows := []struct {
		company, id string
		deleted     bool
		doc         string
	}{
		{"co1", "01", false, `{"id": "01", "last_name": "Anderson", "can_email": true, "tags": ["vip", "b2b"], "COMPANY__tier": 3, "zip_code": "00100"}`},
		{"co1", "02", false, `{"id": "02", "last_name": "Anderson", "can_email": false, "tags": ["b2b"], "COMPANY__tier": "3", "zip_code": "100"}`},
		{"co1", "03", false, `{"id": "03", "last_name": "Brown", "can_email": "true", "tags": [], "COMPANY__tier": 3.0}`},
		{"co1", "04", true, `{"id": "04", "last_name": "Anderson", "can_email": true, "tags": ["vip"]}`},
		{"co2", "05", false, `{"id": "05", "last_name": "Anderson", "can_email": true, "tags": ["vip"]}`},
	}
	for _, r := range rows {
		_, err := pool.Exec(ctx, `INSERT INTO customers (company_id, customer_id, doc, is_deleted, version, created_at, updated_at)
			VALUES ($1, $2, $3, $4, 1, now(), now())`, r.company, r.id, r.doc, r.deleted)
		if err != nil {
			t.Fatal(err)
		}
	}
	q := readmodels.NewCustomers(pool)
	tests := []struct {
		name    string
		filters []readmodels.Filter
		want    []string
	}{
		{"none", nil, []string{"01", "02", "03"}},
		{"string", []readmodels.Filter{{"last_name", "Anderson"}}, []string{"01", "02"}},
		{"boolean, typed or as text", []readmodels.Filter{{"can_email", "true"}}, []string{"01", "03"}},
		{"false", []readmodels.Filter{{"can_email", "false"}}, []string{"02"}},
		{"list contains", []readmodels.Filter{{"tags", "b2b"}}, []string{"01", "02"}},
		{"two values of a list", []readmodels.Filter{{"tags", "b2b"}, {"tags", "vip"}}, []string{"01"}},
		{"company field, number or text", []readmodels.Filter{{"COMPANY__tier", "3"}}, []string{"01", "02", "03"}},
		{"digits stay text too", []readmodels.Filter{{"zip_code", "00100"}}, []string{"01"}},
		{"and", []readmodels.Filter{{"last_name", "Anderson"}, {"can_email", "true"}}, []string{"01"}},
		{"id", []readmodels.Filter{{"id", "02"}}, []string{"02"}},
		{"no match", []readmodels.Filter{{"last_name", "Nobody"}}, []string{}},
		{"unknown field", []readmodels.Filter{{"nope", "x"}}, []string{}},
		{"quotes are data", []readmodels.Filter{{`last_name"}`, `'; --`}}, []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := q.Retrieve(ctx, readmodels.PageQuery{CompanyID: "co1", Filters: tt.filters, Limit: 10})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, ids(t, p.Docs)); diff != "" || p.Next != "" {
				t.Errorf("ids (-want +got):\n%s\nnext %q", diff, p.Next)
			}
		})
	}

	// Pages of two: the cursor is the last id of a page that has a next.
	var got []string
	after := ""
	for i := 0; ; i++ {
		p, err := q.Retrieve(ctx, readmodels.PageQuery{CompanyID: "co1", After: after, Limit: 2})
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, ids(t, p.Docs)...)
		if p.Next == "" {
			break
		}
		if i > 2 {
			t.Fatal("too many pages")
		}
		after = p.Next
	}
	if diff := cmp.Diff([]string{"01", "02", "03"}, got); diff != "" {
		t.Errorf("paged (-want +got):\n%s", diff)
	}
	for _, limit := range []int{0, readmodels.MaxLimit + 1} {
		if _, err := q.Retrieve(ctx, readmodels.PageQuery{CompanyID: "co1", Limit: limit}); err == nil {
			t.Errorf("limit %d accepted", limit)
		}
	}
}

func ids(t *testing.T, docs []json.RawMessage) []string {
	t.Helper()
	out := []string{}
	for _, d := range docs {
		var v struct{ ID string }
		if err := json.Unmarshal(d, &v); err != nil {
			t.Fatal(err)
		}
		out = append(out, v.ID)
	}
	return out
}
