package systemtest_test

import (
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// salesByID indexes retrieved sales by sale_external_id.
func salesByID(items []map[string]any) map[string]map[string]any {
	return byKey(items, "sale_external_id")
}

// rowsOf returns a retrieved sale's rows.
func rowsOf(t *testing.T, s map[string]any) []map[string]any {
	t.Helper()
	raw, ok := s["sale_rows"].([]any)
	if !ok {
		t.Fatalf("sale without sale_rows: %v", s)
	}
	var out []map[string]any
	for _, r := range raw {
		out = append(out, r.(map[string]any))
	}
	return out
}

func TestSalesFlatRowsCustomerAndProducts(t *testing.T) {
	e, token := eventsEnv(t)
	e.importAll(token, "/api/products/upload/", `[{"external_id": "P1", "price": 1000, "sku": "SKU-1", "ean": "111", "title": "Mug"}]`)
	got := e.importAll(token, "/api/sales/upload/", `{"sales": [
		{"sale_external_id": "S1", "product_id": "P1", "quantity": 2, "unit_price": 1000},
		{"sale_external_id": "S1", "product_sku": "SKU-1", "quantity": "1.0000", "unit_price": "1000.0", "discount": -200,
		 "sale_date": "2025-03-01", "sale_email": "Buyer@X.com", "sale_first_name": "Bea", "sale_customer_can_email": true, "sale_city": "Oulu"},
		{"sale_external_id": "S1", "ean": "222", "product_title": "Spoon", "product_brand": "Fiskars", "quantity": 0.003, "unit_price": 500},
		{"sale_external_id": "S1", "product_id": 77, "quantity": 1.005, "unit_price": 100, "product_title": "Fork"}
	]}`)
	if len(got) != 0 {
		t.Fatalf("rejections %v", got)
	}
	s := salesByID(e.retrieveAll(token, "sales").Items)["S1"]
	if s == nil {
		t.Fatal("sale S1 not retrievable")
	}
	if s["sale_date"] != "2025-03-01T00:00:00Z" || s["sale_state"] != "COMPLETE" || s["sale_email"] != "buyer@x.com" || s["sale_currency"] != "EUR" {
		t.Errorf("transaction fields: %v", s)
	}
	rows := rowsOf(t, s)
	type row struct {
		Product  any
		Quantity any
		Total    any
	}
	var gotRows []row
	for _, r := range rows {
		gotRows = append(gotRows, row{r["product_id"], r["quantity"], r["total"]})
	}
	want := []row{{"P1", 2.0, 2000.0}, {"P1", 1.0, 800.0}, {"ean:222", 0.0, 0.0}, {"77", 1.01, 101.0}}
	if diff := cmp.Diff(want, gotRows); diff != "" {
		t.Errorf("rows (-want +got):\n%s", diff)
	}
	if s["sale_total"] != 2901.0 {
		t.Errorf("sale_total %v, want the rows' totals 2901", s["sale_total"])
	}
	c := byKey(e.retrieveAll(token, "customers").Items, "email")["buyer@x.com"]
	if c == nil || c["first_name"] != "Bea" || c["can_email"] != true || c["can_sms"] != false || c["city"] != "Oulu" {
		t.Errorf("customer from the sale: %v", c)
	}
	products := byExternalID(e.retrieveAll(token, "products").Items)
	if p := products["ean:222"]; p == nil || p["title"] != "Spoon" || p["brand"] != "Fiskars" || p["price"] != 500.0 {
		t.Errorf("product created from a row: %v", p)
	}
	if p := products["77"]; p == nil || p["title"] != "Fork" {
		t.Errorf("product 77: %v", p)
	}
	if products["P1"]["title"] != "Mug" || len(products) != 3 {
		t.Errorf("products: %v", products)
	}
}

func TestSalesNestedAndMandatoryFields(t *testing.T) {
	e, token := eventsEnv(t)
	got := e.importAll(token, "/api/sales/upload/", `[
		{"sale_external_id": "N1", "sale_date": "2025-03-01T12:00:00+02:00", "sale_customer_id": "C-1", "sale_total": 5000,
		 "sale_rows": [{"product_id": "A", "quantity": 1}, {"product_id": "B", "quantity": 2, "unit_price": 1000, "external_id": "r2"}]},
		{"product_id": "A", "quantity": 1, "unit_price": 100, "sale_date": "2025-03-01", "sale_email": "a@x.com"},
		{"sale_external_id": "M1", "product_id": "A", "quantity": 1, "unit_price": 100, "sale_email": "a@x.com"},
		{"sale_external_id": "M2", "product_id": "A", "quantity": 1, "unit_price": 100, "sale_date": "2025-03-01"},
		{"sale_external_id": "M3", "product_id": "A", "unit_price": 100, "sale_date": "2025-03-01", "sale_email": "a@x.com"},
		{"sale_external_id": "M4", "product_id": "A", "quantity": 1, "sale_date": "2025-03-01", "sale_email": "a@x.com"},
		{"sale_external_id": "M5", "quantity": 1, "unit_price": 100, "sale_date": "2025-03-01", "sale_email": "a@x.com"},
		{"sale_external_id": "M6", "product_id": "A", "quantity": 1, "unit_price": 100.5, "sale_date": "2025-03-01", "sale_email": "a@x.com"},
		{"sale_external_id": "M7", "product_id": "A", "quantity": 1, "unit_price": 100, "sale_date": "2025-03-01", "sale_email": "a@x.com", "sale_state": "SHIPPED"},
		{"sale_external_id": "OK", "product_id": "A", "quantity": 1, "unit_price": 100, "sale_date": "2025-03-01", "sale_email": "a@x.com", "sale_state": "pending_payment"}
	]`)
	fields := map[int]bool{}
	for _, r := range got {
		fields[r.Index] = true
	}
	for i := 1; i <= 8; i++ {
		if !fields[i] {
			t.Errorf("record %d accepted, want it rejected (rejections %v)", i, got)
		}
	}
	if fields[0] || fields[9] || len(got) != 8 {
		t.Errorf("rejections %v, want 1 to 8", got)
	}
	sales := salesByID(e.retrieveAll(token, "sales").Items)
	n := sales["N1"]
	if n == nil || n["sale_total"] != 5000.0 || n["sale_date"] != "2025-03-01T10:00:00Z" || len(rowsOf(t, n)) != 2 {
		t.Errorf("nested sale: %v", n)
	}
	if ok := sales["OK"]; ok == nil || ok["sale_state"] != "PENDING_PAYMENT" {
		t.Errorf("state: %v", ok)
	}
	if len(sales) != 2 {
		t.Errorf("sales: %v", sales)
	}
}

func TestSalesCurrency(t *testing.T) {
	e, token := eventsEnv(t)
	e.do(http.MethodPut, "/api/exchange-rates/", bearer(token), jsonBody(map[string]any{"exchange_rates": map[string]any{"SEK": "11.5"}})).wantStatus(t, http.StatusOK)
	got := e.importAll(token, "/api/sales/upload/", `[
		{"sale_external_id": "U1", "sale_date": "2025-03-01", "sale_email": "a@x.com", "sale_currency": "USD", "sale_exchange_rate": 0.5,
		 "product_id": "A", "quantity": 2, "unit_price_in_currency": 1000, "unit_price": 1, "sale_shipping_in_currency": 300},
		{"sale_external_id": "U2", "sale_date": "2025-03-01", "sale_email": "a@x.com", "sale_currency": "USD", "product_id": "A", "quantity": 1, "unit_price_in_currency": 1000},
		{"sale_external_id": "K1", "sale_date": "2025-03-01", "sale_email": "a@x.com", "sale_currency": "SEK", "product_id": "A", "quantity": 1, "unit_price_in_currency": 1150, "sale_total_in_currency": 1000}
	]`)
	if diff := cmp.Diff([]rejection{{1, "sale_currency"}}, got); diff != "" {
		t.Errorf("rejections (-want +got):\n%s", diff)
	}
	sales := salesByID(e.retrieveAll(token, "sales").Items)
	u := sales["U1"]
	r := rowsOf(t, u)[0]
	if r["unit_price"] != 2000.0 || r["unit_price_in_currency"] != 1000.0 || r["total"] != 4000.0 || u["sale_shipping"] != 600.0 {
		t.Errorf("USD sale at 0.5: %v", u)
	}
	k := sales["K1"]
	if rowsOf(t, k)[0]["unit_price"] != 100.0 || k["sale_total"] != 87.0 || k["sale_exchange_rate"] != "11.5" {
		t.Errorf("SEK sale with the company's rate 11.5: %v", k)
	}
}

func TestSalesCancellationAndReturnedRow(t *testing.T) {
	e, token := eventsEnv(t)
	e.importAll(token, "/api/sales/upload/", `[
		{"sale_external_id": "S1", "sale_date": "2025-03-01", "sale_email": "a@x.com", "product_id": "A", "quantity": 1, "unit_price": 1000},
		{"sale_external_id": "S1", "product_id": "B", "quantity": 1, "unit_price": 500},
		{"sale_external_id": "S2", "sale_date": "2025-03-01", "sale_email": "a@x.com", "product_id": "A", "quantity": 1, "unit_price": 1000}
	]`)
	// A later upload: one row returned (price 0, tag CANCELLED), a row
	// added, and the whole of S2 cancelled.
	got := e.importAll(token, "/api/sales/upload/", `[
		{"sale_external_id": "S1", "product_id": "B", "quantity": 1, "unit_price": 0, "tags": ["CANCELLED"]},
		{"sale_external_id": "S1", "product_id": "C", "quantity": 3, "unit_price": 100},
		{"sale_external_id": "S2", "sale_state": "CANCELLED"}
	]`)
	if len(got) != 0 {
		t.Fatalf("rejections %v", got)
	}
	sales := salesByID(e.retrieveAll(token, "sales").Items)
	s1 := sales["S1"]
	rows := rowsOf(t, s1)
	if len(rows) != 3 || rows[1]["total"] != 0.0 || !cmp.Equal(rows[1]["tags"], []any{"CANCELLED"}) || s1["sale_total"] != 1300.0 {
		t.Errorf("S1 after the return and the new row: %v", s1)
	}
	if s2 := sales["S2"]; s2["sale_state"] != "CANCELLED" || len(rowsOf(t, s2)) != 1 {
		t.Errorf("S2: %v", s2)
	}
	var counted, revenue int64
	if err := e.pool.QueryRow(t.Context(), `SELECT count(*) FILTER (WHERE counted), coalesce(sum(revenue), 0) FROM sales WHERE company_id = $1`,
		e.acme.ID).Scan(&counted, &revenue); err != nil {
		t.Fatal(err)
	}
	if counted != 1 || revenue != 1300 {
		t.Errorf("counted %d sales with revenue %d, want only S1 with 1300", counted, revenue)
	}
	// Deleted customers take no sales.
	e.importAll(token, "/api/customers/upload/", `[{"email": "a@x.com", "is_deleted": true}]`)
	if got := e.importAll(token, "/api/sales/upload/", `[{"sale_external_id": "S3", "sale_date": "2025-03-01", "sale_email": "a@x.com", "product_id": "A", "quantity": 1, "unit_price": 1}]`); len(got) != 1 {
		t.Errorf("sale of a deleted customer: rejections %v", got)
	}
	if _, ok := salesByID(e.retrieveAll(token, "sales").Items)["S3"]; ok {
		t.Error("sale of a deleted customer stored")
	}
}

func TestDataQueryUpdatesSales(t *testing.T) {
	e, token := eventsEnv(t)
	e.importAll(token, "/api/sales/upload/", `[
		{"sale_external_id": "S1", "sale_date": "2025-03-01", "sale_email": "a@x.com", "sale_shop_id": "web", "product_id": "A", "quantity": 1, "unit_price": 1000},
		{"sale_external_id": "S2", "sale_date": "2025-03-01", "sale_email": "a@x.com", "sale_shop_id": "store", "product_id": "A", "quantity": 1, "unit_price": 1000}
	]`)
	res := e.do(http.MethodPost, "/api/data/query/", bearer(token), jsonBody(map[string]any{
		"datatype": "sales", "match": map[string]any{"sale_shop_id": "web"}, "update": map[string]any{"sale_state": "CLOSED"},
	}))
	res.wantStatus(t, http.StatusOK)
	var a struct {
		Matched int
		RunID   string `json:"run_id"`
	}
	res.decode(t, &a)
	if run, _ := e.waitRun(token, a.RunID); a.Matched != 1 || run.Import.State != "completed" {
		t.Fatalf("answer %s, run %+v", res.body, run.Import)
	}
	e.waitProjections()
	sales := salesByID(e.retrieveAll(token, "sales").Items)
	if sales["S1"]["sale_state"] != "CLOSED" || sales["S2"]["sale_state"] != "COMPLETE" || len(rowsOf(t, sales["S1"])) != 1 {
		t.Errorf("sales after the query: %v", sales)
	}
	// A CLOSED sale is left out of statistics and revenue, like a
	// CANCELLED one.
	var counted, revenue int64
	if err := e.pool.QueryRow(t.Context(), `SELECT count(*) FILTER (WHERE counted), coalesce(sum(revenue), 0) FROM sales WHERE company_id = $1`,
		e.acme.ID).Scan(&counted, &revenue); err != nil {
		t.Fatal(err)
	}
	if counted != 1 || revenue != 1000 {
		t.Errorf("counted %d sales with revenue %d, want only S2 with 1000", counted, revenue)
	}
	e.do(http.MethodPost, "/api/data/query/", bearer(token), jsonBody(map[string]any{
		"datatype": "sales", "match": map[string]any{"sale_shop_id": "web"}, "update": map[string]any{"quantity": 2},
	})).wantError(t, http.StatusUnprocessableEntity, "validation_error")
}
