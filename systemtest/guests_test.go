package systemtest_test

import (
	"testing"
)

// TestGuestsStayApart: shop plugins send sale_customer_id (sales) and
// customer_id (events) as 0, "0", "" or null for a guest. Those mean "no
// customer id": each guest is found or created by its email, and no
// customer "0" ever holds two guests' purchases (issue 12: the first
// guest's purchase belonged to the second guest).
func TestGuestsStayApart(t *testing.T) {
	e, token := eventsEnv(t)
	e.importAll(token, "/api/products/upload/", `[{"external_id": "P1", "price": 1000}]`)
	if got := e.importAll(token, "/api/sales/upload/", `{"sales": [
		{"sale_external_id": "G1", "sale_date": "2025-03-01", "sale_customer_id": "0", "sale_email": "ann@example.com", "product_id": "P1", "quantity": 1, "unit_price": 1000},
		{"sale_external_id": "G2", "sale_date": "2025-03-02", "sale_customer_id": 0, "sale_email": "bob@example.com", "product_id": "P1", "quantity": 1, "unit_price": 1000},
		{"sale_external_id": "G3", "sale_date": "2025-03-03", "sale_customer_id": "", "sale_email": "cy@example.com", "product_id": "P1", "quantity": 1, "unit_price": 1000},
		{"sale_external_id": "G4", "sale_date": "2025-03-04", "sale_customer_id": null, "sale_email": "dee@example.com", "product_id": "P1", "quantity": 1, "unit_price": 1000},
		{"sale_external_id": "G5", "sale_date": "2025-03-05", "sale_customer_id": "0", "product_id": "P1", "quantity": 1, "unit_price": 1000}
	]}`); len(got) != 1 || got[0].Index != 4 {
		t.Fatalf("rejections %v, want only G5's: a guest with no email or phone names no customer", got)
	}
	if got := e.importAll(token, "/api/events/upload/", `[
		{"type": "BROWSE", "date": "2025-03-06", "customer_id": 0, "email": "ann@example.com", "label": "guest ann"},
		{"type": "MAIL_SUBSCRIBE", "date": "2025-03-06", "customer_id": "0", "email": "eve@example.com", "mailing_lists": ["news"]}
	]`); len(got) != 0 {
		t.Fatalf("event rejections %v", got)
	}
	customers := e.retrieve(token).Customers
	emails := map[string]string{} // email -> customer id
	for _, c := range customers {
		if c["external_id"] != nil {
			t.Errorf("a guest got an external_id: %v", c)
		}
		emails[c["email"].(string)] = c["id"].(string)
	}
	for _, email := range []string{"ann@example.com", "bob@example.com", "cy@example.com", "dee@example.com", "eve@example.com"} {
		if emails[email] == "" {
			t.Errorf("no customer for %s: %v", email, customers)
		}
	}
	if len(customers) != 5 {
		t.Errorf("%d customers, want one per guest: %v", len(customers), customers)
	}
	sales := salesByID(e.retrieveAll(token, "sales").Items)
	for id, email := range map[string]string{"G1": "ann@example.com", "G2": "bob@example.com", "G3": "cy@example.com", "G4": "dee@example.com"} {
		if s := sales[id]; s == nil || s["sale_email"] != email || s["sale_customer_id"] != nil {
			t.Errorf("sale %s: %v, want %s's and no sale_customer_id", id, s, email)
		}
	}
}
