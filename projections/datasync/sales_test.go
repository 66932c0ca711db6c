package datasync_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/clientele/clientele/domain/datatarget"
	"github.com/clientele/clientele/domain/sale"
	"github.com/clientele/clientele/projections/internal/projectiontest"
	"github.com/clientele/clientele/projections/retrieval"
)

// TestDatasyncSales: every SaleUpserted after a datatarget's creation (or
// since the start) is one message in log order, holding the transaction
// as retrieval shows it after the change (the sales projector's document,
// personal fields opened, a deleted sale with "sale_is_deleted": true),
// restricted to the datatarget's fields plus sale_external_id and
// sale_is_deleted; a rebuild gives the same bytes.
func TestDatasyncSales(t *testing.T) {
	e := newDatasyncEnv(t)
	co := e.co.ID
	e.set("c1", map[string]any{"email": "ann@example.com"})
	r1 := map[string]any{"product_id": "P-1", "total": 1000}
	r2 := map[string]any{"product_id": "P-2", "total": 300}
	e.SaleUpsert(co, sale.Upserted{SaleID: "s1", ExternalID: "S-1", CustomerID: "c1", Created: true,
		Set:    map[string]any{"sale_date": "2024-05-06T04:08:09Z", "sale_state": "COMPLETE"},
		Rows:   []sale.Row{projectiontest.Row("id:1", r1)},
		Sealed: e.Seal(co, "c1", map[string]any{"sale_first_name": "Ann"})})
	all := e.datasyncOf(datatarget.Sales, "all", nil, false)
	some := e.datasyncOf(datatarget.Sales, "some", []string{"sale_total"}, false)
	e.SaleUpsert(co, sale.Upserted{SaleID: "s1", ExternalID: "S-1", CustomerID: "c1", Rows: []sale.Row{projectiontest.Row("id:2", r2)}})
	e.SaleUpsert(co, sale.Upserted{SaleID: "s2", ExternalID: "S-2", CustomerID: "c1", Created: true, Set: map[string]any{"sale_total": 50}})
	e.SaleUpsert("other", sale.Upserted{SaleID: "s9", ExternalID: "S-9", CustomerID: "c9", Created: true})
	fromStart := e.datasyncOf(datatarget.Sales, "from start", nil, true)
	e.SaleUpsert(co, sale.Upserted{SaleID: "s1", ExternalID: "S-1", CustomerID: "c1", Set: map[string]any{"sale_is_deleted": true}})

	row1, row2 := map[string]any{"product_id": "P-1", "total": 1000.0}, map[string]any{"product_id": "P-2", "total": 300.0}
	s1 := map[string]any{"sale_external_id": "S-1", "sale_date": "2024-05-06T04:08:09Z", "sale_state": "COMPLETE", "sale_is_deleted": false,
		"sale_first_name": "Ann", "sale_rows": []any{row1}, "sale_total": 1000.0}
	s1b := with(with(s1, "sale_rows", []any{row1, row2}), "sale_total", 1300.0)
	s1d := with(s1b, "sale_is_deleted", true)
	s2 := map[string]any{"sale_external_id": "S-2", "sale_is_deleted": false, "sale_rows": []any{}, "sale_total": 50.0}
	pos := e.positionsOf(sale.TypeUpserted)
	want := func(from int, data ...map[string]any) []syncMessage {
		out := make([]syncMessage, len(data))
		for i, d := range data {
			out[i] = syncMessage{UpdateID: pos[from+i], Datatype: "sales", Data: d}
		}
		return out
	}
	if diff := cmp.Diff(want(1, s1b, s2, s1d), e.messages(all)); diff != "" {
		t.Errorf("all fields (-want +got):\n%s", diff)
	}
	only := func(d map[string]any) map[string]any {
		return pick(d, "sale_external_id", "sale_is_deleted", "sale_total")
	}
	if diff := cmp.Diff(want(1, only(s1b), only(s2), only(s1d)), e.messages(some)); diff != "" {
		t.Errorf("some fields (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want(0, s1, s1b, s2, s1d), e.messages(fromStart)); diff != "" {
		t.Errorf("from start (-want +got):\n%s", diff)
	}

	// The last message of each sale is its read-model document.
	docs := e.readModel(retrieval.NewSales(e.Keys), `SELECT doc::text FROM sales WHERE company_id = $1 ORDER BY sale_id`)
	if diff := cmp.Diff([]map[string]any{s1d, s2}, docs); diff != "" {
		t.Errorf("read model (-messages +read model):\n%s", diff)
	}

	before := e.tables()
	e.rebuild()
	if diff := cmp.Diff(before, e.tables()); diff != "" {
		t.Errorf("after a rebuild (-before +after):\n%s", diff)
	}
	e.applyAll()
	if diff := cmp.Diff(before, e.tables()); diff != "" {
		t.Errorf("applied twice (-once +twice):\n%s", diff)
	}
}
