package retrieval_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/clientele/clientele/domain/customer"
	"github.com/clientele/clientele/domain/sale"
	"github.com/clientele/clientele/projections/internal/projectiontest"
)

// saleCols are the columns of a sales row besides the doc.
type saleCols struct {
	CustomerID string
	Deleted    bool
	State      string
	Counted    bool
	Revenue    int64
	Date       *time.Time
	TotalGiven bool
}

func (e *activityEnv) saleRow(company, id string) (map[string]any, saleCols) {
	e.T.Helper()
	docs := e.Docs(`SELECT doc FROM sales WHERE company_id = $1 AND sale_id = $2`, company, id)
	if len(docs) != 1 {
		e.T.Fatalf("sale %s: %d rows", id, len(docs))
	}
	var c saleCols
	err := e.Pool.QueryRow(context.Background(), `SELECT customer_id, is_deleted, state, counted, revenue, sale_date, total_given
		FROM sales WHERE company_id = $1 AND sale_id = $2`, company, id).
		Scan(&c.CustomerID, &c.Deleted, &c.State, &c.Counted, &c.Revenue, &c.Date, &c.TotalGiven)
	if err != nil {
		e.T.Fatal(err)
	}
	if c.Date != nil {
		*c.Date = c.Date.UTC()
	}
	return docs[0], c
}

// TestSalesProjector: a sale's document is its transaction fields, its
// personal fields opened, sale_rows (replaced by key or appended, deleted
// rows left out) and sale_total (given, or the rows' totals minus
// sale_discount, recomputed when a row changes); the columns follow.
func TestSalesProjector(t *testing.T) {
	e := newActivityEnv(t)
	e.Upsert("co1", "c1", customer.Changes{Set: map[string]any{"email": "ann@example.com"}})
	date := time.Date(2024, 5, 6, 4, 8, 9, 0, time.UTC)
	r1 := map[string]any{"product_id": "P-1", "quantity": 2, "unit_price": 500, "total": 1000}
	r2 := map[string]any{"product_id": "P-2", "quantity": 1, "unit_price": 300, "total": 300}
	e.SaleUpsert("co1", sale.Upserted{SaleID: "s1", ExternalID: "S-1", CustomerID: "c1", Created: true,
		Set: map[string]any{"sale_date": "2024-05-06T07:08:09+03:00", "sale_state": "COMPLETE", "sale_discount": 100,
			"sale_currency": "EUR", "ACME__channel": "web", "sale_rows": "ignored", "sale_email": "clear@example.com"},
		Rows:   []sale.Row{projectiontest.Row("id:1", r1), projectiontest.Row("product:P-2#0", r2)},
		Sealed: e.Seal("co1", "c1", map[string]any{"sale_email": "ann@example.com", "sale_first_name": "Ann", "nope": "x"})})

	num := func(m map[string]any) map[string]any {
		out := map[string]any{}
		for k, v := range m {
			if n, ok := v.(int); ok {
				v = float64(n)
			}
			out[k] = v
		}
		return out
	}
	want := map[string]any{"sale_external_id": "S-1", "sale_date": "2024-05-06T04:08:09Z", "sale_state": "COMPLETE",
		"sale_discount": 100.0, "sale_currency": "EUR", "ACME__channel": "web", "sale_is_deleted": false,
		"sale_email": "ann@example.com", "sale_first_name": "Ann",
		"sale_rows": []any{num(r1), num(r2)}, "sale_total": 1200.0}
	check := func(what string, want map[string]any, cols saleCols) {
		t.Helper()
		doc, got := e.saleRow("co1", "s1")
		if diff := cmp.Diff(want, doc); diff != "" {
			t.Errorf("%s: doc (-want +got):\n%s", what, diff)
		}
		if diff := cmp.Diff(cols, got); diff != "" {
			t.Errorf("%s: columns (-want +got):\n%s", what, diff)
		}
	}
	check("created", want, saleCols{"c1", false, "COMPLETE", true, 1200, &date, false})

	// A row replaced by its key, one appended, one deleted: the total
	// follows. A personal field removed with "".
	r1b := map[string]any{"product_id": "P-1", "quantity": 3, "unit_price": 500, "total": 1500}
	r3 := map[string]any{"product_id": "P-3", "quantity": 1, "unit_price": 50, "total": 50}
	e.SaleUpsert("co1", sale.Upserted{SaleID: "s1", ExternalID: "S-1", CustomerID: "c1",
		Rows:   []sale.Row{projectiontest.Row("id:1", r1b), projectiontest.Row("product:P-3#0", r3), projectiontest.Row("product:P-2#0", map[string]any{"product_id": "P-2", "is_deleted": true, "total": 300})},
		Sealed: e.Seal("co1", "c1", map[string]any{"sale_first_name": ""})})
	delete(want, "sale_first_name")
	want["sale_rows"], want["sale_total"] = []any{num(r1b), num(r3)}, 1450.0
	check("rows changed", want, saleCols{"c1", false, "COMPLETE", true, 1450, &date, false})

	// A given sale_total stays when a row changes; removed, the rows
	// compute it again.
	e.SaleUpsert("co1", sale.Upserted{SaleID: "s1", ExternalID: "S-1", CustomerID: "c1", Set: map[string]any{"sale_total": 2000}})
	r3b := map[string]any{"product_id": "P-3", "quantity": 2, "unit_price": 50, "total": 100}
	e.SaleUpsert("co1", sale.Upserted{SaleID: "s1", ExternalID: "S-1", CustomerID: "c1", Rows: []sale.Row{projectiontest.Row("product:P-3#0", r3b)}})
	want["sale_rows"], want["sale_total"] = []any{num(r1b), num(r3b)}, 2000.0
	check("total given", want, saleCols{"c1", false, "COMPLETE", true, 2000, &date, true})
	e.SaleUpsert("co1", sale.Upserted{SaleID: "s1", ExternalID: "S-1", CustomerID: "c1", Unset: []string{"sale_total", "sale_discount"}})
	delete(want, "sale_discount")
	want["sale_total"] = 1600.0
	check("total removed", want, saleCols{"c1", false, "COMPLETE", true, 1600, &date, false})

	// Cancelled: not counted, no revenue. Deleted: hidden from retrieval.
	e.SaleUpsert("co1", sale.Upserted{SaleID: "s1", ExternalID: "S-1", CustomerID: "c1", Set: map[string]any{"sale_state": "CANCELLED"}})
	want["sale_state"] = "CANCELLED"
	check("cancelled", want, saleCols{"c1", false, "CANCELLED", false, 0, &date, false})
	e.SaleUpsert("co1", sale.Upserted{SaleID: "s1", ExternalID: "S-1", CustomerID: "c1", Set: map[string]any{"sale_state": "COMPLETE", "sale_is_deleted": true}})
	want["sale_state"], want["sale_is_deleted"] = "COMPLETE", true
	check("deleted", want, saleCols{"c1", true, "COMPLETE", false, 0, &date, false})

	// A sale without a date, state or rows, of a customer without
	// personal fields.
	e.SaleUpsert("co1", sale.Upserted{SaleID: "s2", ExternalID: "S-2", CustomerID: "c1", Created: true, Set: map[string]any{"sale_total": 5}})
	doc, cols := e.saleRow("co1", "s2")
	if diff := cmp.Diff(map[string]any{"sale_external_id": "S-2", "sale_total": 5.0, "sale_rows": []any{}, "sale_is_deleted": false}, doc); diff != "" {
		t.Errorf("s2 (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(saleCols{"c1", false, "COMPLETE", true, 5, nil, true}, cols); diff != "" {
		t.Errorf("s2 columns (-want +got):\n%s", diff)
	}

	before := e.TableText("sales", "company_id, sale_id")
	e.ApplyLog(e.Sales)
	if diff := cmp.Diff(before, e.TableText("sales", "company_id, sale_id")); diff != "" {
		t.Errorf("applied twice (-once +twice):\n%s", diff)
	}
	e.RebuildInline(e.Sales)
	if diff := cmp.Diff(before, e.TableText("sales", "company_id, sale_id")); diff != "" {
		t.Errorf("rebuilt (-before +after):\n%s", diff)
	}
}

// TestSalesForgotten: forgetting a customer removes the personal fields
// from its sales, live and in a rebuild; a sale moved to another customer
// keeps none of the first one's.
func TestSalesForgotten(t *testing.T) {
	e := newActivityEnv(t)
	secrets := []string{"zq-secret@example.org", "Xyzzysecret", "Plughsecret"}
	e.Upsert("co1", "c1", customer.Changes{Set: map[string]any{"email": secrets[0]}})
	e.Upsert("co1", "c2", customer.Changes{Set: map[string]any{"email": "keep@example.org"}})
	r1 := map[string]any{"product_id": "P-1", "total": 1000}
	e.SaleUpsert("co1", sale.Upserted{SaleID: "s1", ExternalID: "S-1", CustomerID: "c1", Created: true,
		Set: map[string]any{"sale_date": "2024-05-06T04:08:09Z"}, Rows: []sale.Row{projectiontest.Row("id:1", r1)},
		Sealed: e.Seal("co1", "c1", map[string]any{"sale_email": secrets[0], "sale_first_name": secrets[1]})})
	e.SaleUpsert("co1", sale.Upserted{SaleID: "s2", ExternalID: "S-2", CustomerID: "c2", Created: true,
		Set:    map[string]any{"sale_date": "2024-05-06T04:08:09Z"},
		Sealed: e.Seal("co1", "c2", map[string]any{"sale_email": "keep@example.org"})})
	// s3 moves from c1 to c2: c1's personal fields go with it.
	e.SaleUpsert("co1", sale.Upserted{SaleID: "s3", ExternalID: "S-3", CustomerID: "c1", Created: true,
		Sealed: e.Seal("co1", "c1", map[string]any{"sale_last_name": secrets[2], "sale_city": "Oulu"})})
	e.SaleUpsert("co1", sale.Upserted{SaleID: "s3", ExternalID: "S-3", CustomerID: "c2",
		Sealed: e.Seal("co1", "c2", map[string]any{"sale_city": "Turku"})})
	if doc, cols := e.saleRow("co1", "s3"); doc["sale_last_name"] != nil || doc["sale_city"] != "Turku" || cols.CustomerID != "c2" {
		t.Errorf("moved sale: %v %+v", doc, cols)
	}
	if n := e.Holding("sales", secrets...); n != 1 {
		t.Fatalf("%d rows hold the secrets before forgetting, want 1: the search is wrong", n)
	}

	e.End("co1", "c1", customer.TypeForgotten)
	wantS1 := map[string]any{"sale_external_id": "S-1", "sale_date": "2024-05-06T04:08:09Z", "sale_is_deleted": false,
		"sale_rows": []any{map[string]any{"product_id": "P-1", "total": 1000.0}}, "sale_total": 1000.0}
	if doc, _ := e.saleRow("co1", "s1"); !cmp.Equal(wantS1, doc) {
		t.Errorf("forgotten customer's sale (-want +got):\n%s", cmp.Diff(wantS1, doc))
	}
	if doc, _ := e.saleRow("co1", "s2"); doc["sale_email"] != "keep@example.org" {
		t.Errorf("other customer's sale: %v", doc)
	}
	if n := e.Holding("sales", secrets...); n != 0 {
		t.Errorf("%d rows still hold the forgotten customer's data", n)
	}
	// A later change of the sale brings nothing back.
	e.SaleUpsert("co1", sale.Upserted{SaleID: "s1", ExternalID: "S-1", CustomerID: "c1", Set: map[string]any{"sale_state": "COMPLETE"},
		Sealed: e.Seal("co1", "c2", map[string]any{"sale_first_name": secrets[1]})})
	wantS1["sale_state"] = "COMPLETE"
	if doc, _ := e.saleRow("co1", "s1"); !cmp.Equal(wantS1, doc) {
		t.Errorf("changed after forgetting (-want +got):\n%s", cmp.Diff(wantS1, doc))
	}

	before := e.TableText("sales", "company_id, sale_id")
	e.RebuildInline(e.Sales)
	if diff := cmp.Diff(before, e.TableText("sales", "company_id, sale_id")); diff != "" {
		t.Errorf("rebuilt (-before +after):\n%s", diff)
	}
	if n := e.Holding("sales", secrets...); n != 0 {
		t.Errorf("%d rows hold the forgotten customer's data after the rebuild", n)
	}
}
