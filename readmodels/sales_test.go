package readmodels_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/clientele/clientele/internal/pg/pgtest"
	"github.com/clientele/clientele/readmodels"
)

// TestRetrieveSales: sales are paged by sale id (creation order); deleted
// ones and other companies' are left out; cancelled ones are shown.
func TestRetrieveSales(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	for _, r := range []struct {
		company, id, state string
		deleted            bool
	}{
		{"co1", "01", "COMPLETE", false}, {"co1", "02", "CANCELLED", false}, {"co1", "03", "COMPLETE", true},
		{"co1", "04", "COMPLETE", false}, {"co2", "05", "COMPLETE", false},
	} {
		doc, _ := json.Marshal(map[string]any{"sale_external_id": "S-" + r.id, "sale_state": r.state, "sale_is_deleted": r.deleted})
		_, err := pool.Exec(ctx, `INSERT INTO sales (company_id, sale_id, customer_id, doc, is_deleted, state, counted, revenue,
			version, created_at, updated_at) VALUES ($1, $2, 'c1', $3, $4, $5, true, 0, 1, now(), now())`, r.company, r.id, doc, r.deleted, r.state)
		if err != nil {
			t.Fatal(err)
		}
	}
	q := readmodels.NewSales(pool)
	var got []string
	after := ""
	for i := 0; ; i++ {
		p, err := q.Retrieve(ctx, readmodels.PageQuery{CompanyID: "co1", After: after, Limit: 2})
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, saleIDs(t, p.Docs)...)
		if p.Next == "" {
			break
		}
		if i > 2 {
			t.Fatal("too many pages")
		}
		after = p.Next
	}
	if diff := cmp.Diff([]string{"S-01", "S-02", "S-04"}, got); diff != "" {
		t.Errorf("paged (-want +got):\n%s", diff)
	}
	p, err := q.Retrieve(ctx, readmodels.PageQuery{CompanyID: "co1", Filters: []readmodels.Filter{{Field: "sale_state", Value: "CANCELLED"}}, Limit: 10})
	if err != nil || !cmp.Equal(saleIDs(t, p.Docs), []string{"S-02"}) {
		t.Errorf("filtered: %s %v", p.Docs, err)
	}
}

func saleIDs(t *testing.T, docs []json.RawMessage) []string {
	t.Helper()
	out := []string{}
	for _, d := range docs {
		var v struct {
			ID string `json:"sale_external_id"`
		}
		if err := json.Unmarshal(d, &v); err != nil {
			t.Fatal(err)
		}
		out = append(out, v.ID)
	}
	return out
}
