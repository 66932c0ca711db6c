package systemtest_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// A mixed run: a catalogue, then events and sales that refer to its
// products (by id, sku and ean) and to unknown ones, for known and new
// customers. Retrieval afterwards is exactly what the rules say.
func TestMixedRun(t *testing.T) {
	e, token := eventsEnv(t)
	e.importAll(token, "/api/products/upload/", `[
		{"external_id": "P1", "price": 1000, "sku": "SKU-1", "title": "Mug"},
		{"external_id": "P2", "price": 2500, "ean": "6400001", "title": "Teapot"}
	]`)
	e.importAll(token, "/api/customers/upload/", `[{"external_id": "C1", "email": "c1@x.com", "can_email": true}]`)
	events := e.importAll(token, "/api/events/upload/", `[
		{"type": "BROWSE", "date": "2025-01-02T10:00:00Z", "customer_id": "C1", "product_id": "P1"},
		{"type": "BASKET_ADD", "date": "2025-01-02T10:05:00Z", "customer_id": "C1", "product_ean": "6400001"},
		{"type": "BASKET_ADD", "date": "2025-01-02T10:06:00Z", "customer_id": "C1", "product_id": "P9", "title": "Jug", "price": 700},
		{"type": "MAIL_SUBSCRIBE", "date": "2025-01-02T11:00:00Z", "email": "new@x.com", "mailing_lists": ["news"]},
		{"type": "BROWSE", "date": "2025-01-02T12:00:00Z", "email": "stranger@x.com", "label": "home"}
	]`)
	sales := e.importAll(token, "/api/sales/upload/", `[
		{"sale_external_id": "S1", "product_sku": "SKU-1", "quantity": 2, "unit_price": 900},
		{"sale_external_id": "S1", "product_id": "P2", "quantity": 1, "unit_price": 2500, "discount": 500,
		 "sale_date": "2025-01-03", "sale_customer_id": "C1"},
		{"sale_external_id": "S2", "sale_date": "2025-01-04", "sale_email": "buyer@x.com", "sale_customer_can_sms": true,
		 "ean": "7300002", "product_title": "Kettle", "quantity": 1, "unit_price": 4000}
	]`)
	if diff := cmp.Diff([]rejection{{4, "email"}}, events); diff != "" {
		t.Errorf("event rejections (-want +got):\n%s", diff)
	}
	if len(sales) != 0 {
		t.Errorf("sale rejections %v", sales)
	}

	type product struct {
		Title any
		Price any
	}
	products := map[string]product{}
	for _, p := range e.retrieveAll(token, "products").Items {
		products[p["external_id"].(string)] = product{p["title"], p["price"]}
	}
	wantProducts := map[string]product{
		"P1": {"Mug", 1000.0}, "P2": {"Teapot", 2500.0}, "P9": {"Jug", 700.0}, "ean:7300002": {"Kettle", 4000.0},
	}
	if diff := cmp.Diff(wantProducts, products); diff != "" {
		t.Errorf("products (-want +got):\n%s", diff)
	}

	type event struct {
		ID                        float64
		Type, Customer, ProductID any
	}
	var gotEvents []event
	for _, ev := range e.retrieveAll(token, "events").Items {
		cust := ev["customer_id"]
		if cust == nil {
			cust = ev["email"]
		}
		gotEvents = append(gotEvents, event{ev["id"].(float64), ev["type"], cust, ev["product_id"]})
	}
	wantEvents := []event{{1, "BROWSE", "C1", "P1"}, {2, "BASKET_ADD", "C1", "P2"}, {3, "BASKET_ADD", "C1", "P9"}, {4, "MAIL_SUBSCRIBE", "new@x.com", nil}}
	if diff := cmp.Diff(wantEvents, gotEvents); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}

	type row struct{ Product, Total any }
	type sale struct {
		Customer, Total any
		Rows            []row
	}
	gotSales := map[string]sale{}
	for _, s := range e.retrieveAll(token, "sales").Items {
		var rows []row
		for _, r := range rowsOf(t, s) {
			rows = append(rows, row{r["product_id"], r["total"]})
		}
		cust := s["sale_customer_id"]
		if cust == nil {
			cust = s["sale_email"]
		}
		gotSales[s["sale_external_id"].(string)] = sale{cust, s["sale_total"], rows}
	}
	wantSales := map[string]sale{
		"S1": {"C1", 3800.0, []row{{"P1", 1800.0}, {"P2", 2000.0}}},
		"S2": {"buyer@x.com", 4000.0, []row{{"ean:7300002", 4000.0}}},
	}
	if diff := cmp.Diff(wantSales, gotSales); diff != "" {
		t.Errorf("sales (-want +got):\n%s", diff)
	}

	type customer struct{ Email, CanEmail, CanSMS, Lists any }
	gotCustomers := map[string]customer{}
	for _, c := range e.retrieveAll(token, "customers").Items {
		gotCustomers[c["email"].(string)] = customer{c["email"], c["can_email"], c["can_sms"], c["mailing_lists"]}
	}
	wantCustomers := map[string]customer{
		"c1@x.com":    {"c1@x.com", true, false, []any{}},
		"new@x.com":   {"new@x.com", true, false, []any{"news"}},
		"buyer@x.com": {"buyer@x.com", false, true, []any{}},
	}
	if diff := cmp.Diff(wantCustomers, gotCustomers); diff != "" {
		t.Errorf("customers (-want +got):\n%s", diff)
	}
}
