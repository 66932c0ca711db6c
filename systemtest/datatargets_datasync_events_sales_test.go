package systemtest_test

import (
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/clientele/clientele/api"
	"github.com/clientele/clientele/app"
	"github.com/clientele/clientele/eventstore/postgres"
	"github.com/clientele/clientele/projections/datasync"
	retrievalproj "github.com/clientele/clientele/projections/retrieval"
)

// TestDatasyncEventsAndSales feeds events and sales datatargets from
// real imports: one message per change, data being the entity as
// retrieval shows it after the change (a deleted event included, as its
// new state), restricted to the chosen fields plus the identifying ones.
func TestDatasyncEventsAndSales(t *testing.T) {
	e := newEnv(t, func(c *api.Config, _ *app.Application) { c.RateLimit = math.Inf(1) })
	e.runProjections(retrievalproj.NewCustomers(e.keys), retrievalproj.NewEvents(e.keys), retrievalproj.NewSales(e.keys), datasync.NewDatasync(e.keys, postgres.EventLog{}))
	e.runImports()
	admin := e.userToken(e.admin, acmeHost)
	events := e.createDatasync(admin, "events", map[string]any{"datatype": "events", "fields": []string{"type", "label"}})
	sales := e.createDatasync(admin, "sales", map[string]any{"datatype": "sales"})

	e.importAll(admin, "/api/customers/upload/", `[{"external_id": "C1", "email": "a@x.com"}]`)
	e.importAll(admin, "/api/events/upload/", `[{"type": "BROWSE", "date": "2025-01-02", "customer_id": "C1", "label": "home", "path": "/"}]`)
	e.importAll(admin, "/api/events/upload/", `[{"id": 1, "is_deleted": true}]`)
	// Deleting it again, twice in one upload and in another, is accepted
	// and changes nothing: no second message.
	if rej := e.importAll(admin, "/api/events/upload/", `[{"id": 1, "is_deleted": true}, {"id": 1, "is_deleted": true}]`); len(rej) != 0 {
		t.Errorf("deleting a deleted event again: rejections %v", rej)
	}
	e.importAll(admin, "/api/sales/upload/", `[{"sale_external_id": "S1", "sale_date": "2025-01-03", "sale_customer_id": "C1", "product_id": "P", "quantity": 2, "unit_price": 100}]`)
	e.importAll(admin, "/api/sales/upload/", `[{"sale_external_id": "S1", "sale_state": "CANCELLED"}]`)
	e.waitProjections()

	page := e.syncMessages(admin, events["id"].(string))
	var got []map[string]any
	for _, m := range page.Messages {
		if m.Datatype != "events" || m.UpdateID == "" {
			t.Errorf("message %+v", m)
		}
		got = append(got, m.Data)
	}
	want := []map[string]any{
		{"id": 1.0, "is_deleted": false, "type": "BROWSE", "label": "home"},
		{"id": 1.0, "is_deleted": true, "type": "BROWSE", "label": "home"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events messages (-want +got):\n%s", diff)
	}

	page = e.syncMessages(admin, sales["id"].(string))
	if len(page.Messages) != 2 {
		t.Fatalf("sales messages: %+v", page)
	}
	first, last := page.Messages[0].Data, page.Messages[1].Data
	if first["sale_state"] != "COMPLETE" || last["sale_state"] != "CANCELLED" || last["sale_customer_id"] != "C1" || last["sale_total"] != 200.0 {
		t.Errorf("sales messages: %v, %v", first, last)
	}
	retrieved := salesByID(e.retrieveAll(admin, "sales").Items)["S1"]
	if diff := cmp.Diff(retrieved, last); diff != "" {
		t.Errorf("the last message is not the sale as retrieval shows it (-retrieval +message):\n%s", diff)
	}
}
