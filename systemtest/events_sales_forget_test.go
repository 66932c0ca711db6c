package systemtest_test

import (
	"net/http"
	"testing"

	"github.com/clientele/clientele/eventstore/postgres"
	"github.com/clientele/clientele/projections"
	"github.com/clientele/clientele/projections/datasync"
	retrievalproj "github.com/clientele/clientele/projections/retrieval"
)

// Forgetting a customer shreds what their events and sales say about
// them: after the forget and a rebuild of every projection, no table of
// the database (the event log included) holds any of their values, and
// their events and sales are still there, anonymous.
func TestForgetCoversEventsAndSales(t *testing.T) {
	e := newEnv(t)
	async := []projections.Projector{retrievalproj.NewCustomers(e.keys), retrievalproj.NewProducts(), retrievalproj.NewShops(),
		retrievalproj.NewEvents(e.keys), retrievalproj.NewSales(e.keys), datasync.NewDatasync(e.keys, postgres.EventLog{})}
	e.runProjections(async...)
	e.runImports()
	token := e.userToken(e.admin, acmeHost)
	for _, datatype := range []string{"events", "sales"} {
		e.do(http.MethodPost, "/api/datatargets/", bearer(token), jsonBody(map[string]any{
			"name": datatype, "datatarget_type": "datasync", "datatype": datatype,
		})).wantStatus(t, http.StatusOK)
	}
	secrets := []string{"zelda.q@secret.test", "+358501112233", "ZQ-7781", "Zelda", "Quixotica", "Obscurity Lane 9", "Hushville", "99123", "Veiled Oy"}
	e.importAll(token, "/api/customers/upload/", `[{"external_id": "ZQ-7781", "email": "zelda.q@secret.test"}]`)
	e.importAll(token, "/api/events/upload/", `[
		{"type": "BROWSE", "date": "2025-01-02", "customer_id": "ZQ-7781", "label": "home", "first_name": "Zelda", "company": "Veiled Oy"},
		{"type": "SMS_SUBSCRIBE", "date": "2025-01-02", "email": "zelda.q@secret.test", "phone_number": "+358501112233", "last_name": "Quixotica"}
	]`)
	e.importAll(token, "/api/sales/upload/", `[{"sale_external_id": "S-1", "sale_date": "2025-01-03", "sale_email": "zelda.q@secret.test",
		"sale_street_address": "Obscurity Lane 9", "sale_city": "Hushville", "sale_zip_code": "99123",
		"product_id": "P1", "quantity": 1, "unit_price": 1000}]`)
	if found := e.findValues(secrets...); len(found) == 0 {
		t.Fatal("the values were never stored: the test would prove nothing")
	}
	e.importAll(token, "/api/customers/upload/", `[{"email": "zelda.q@secret.test", "is_forgotten": true}]`)
	e.rebuildAll(async...)
	if found := e.findValues(secrets...); len(found) > 0 {
		t.Errorf("the forgotten customer's values are still stored: %v", found)
	}
	events := e.retrieveAll(token, "events").Items
	sales := e.retrieveAll(token, "sales").Items
	if len(events) != 2 || len(sales) != 1 || events[0]["label"] != "home" || sales[0]["sale_city"] != nil {
		t.Errorf("after forgetting: events %v, sales %v", events, sales)
	}
	// A later event or sale of the forgotten person does not bring them
	// back.
	got := e.importAll(token, "/api/events/upload/", `[{"type": "MAIL_SUBSCRIBE", "date": "2025-02-01", "email": "zelda.q@secret.test", "mailing_lists": ["news"]}]`)
	got = append(got, e.importAll(token, "/api/sales/upload/", `[{"sale_external_id": "S-2", "sale_date": "2025-02-01", "sale_email": "zelda.q@secret.test", "product_id": "P1", "quantity": 1, "unit_price": 1}]`)...)
	if len(got) != 2 {
		t.Errorf("imports naming the forgotten person: rejections %v, want both rejected", got)
	}
	if found := e.findValues(secrets[0]); len(found) > 0 {
		t.Errorf("a rejected import stored the value: %v", found)
	}
	// Nor does an update of one of their sales that names no customer
	// (the sale's customer is the stored one): refused, and the company's
	// imports go on behind it.
	got = e.importAll(token, "/api/sales/upload/", `[
		{"sale_external_id": "S-1", "sale_conversion_user_agent": "Mozilla/5.0 (Zelda)"},
		{"sale_external_id": "S-1", "sale_state": "CANCELLED"},
		{"sale_external_id": "S-9", "sale_date": "2025-02-01", "sale_email": "other@x.com", "product_id": "P1", "quantity": 1, "unit_price": 1}
	]`)
	if len(got) != 2 || got[0].Index != 0 || got[1].Index != 1 {
		t.Errorf("updates of a forgotten customer's sale: rejections %v, want the two of S-1", got)
	}
	if s := salesByID(e.retrieveAll(token, "sales").Items)["S-1"]; s["sale_state"] != "COMPLETE" || len(salesByID(e.retrieveAll(token, "sales").Items)) != 2 {
		t.Errorf("sales after the refused updates: %v", e.retrieveAll(token, "sales").Items)
	}
}
