package systemtest_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/clientele/clientele/domain/sale"
	"github.com/clientele/clientele/eventstore/postgres"
	"github.com/clientele/clientele/projections"
	retrievalproj "github.com/clientele/clientele/projections/retrieval"
)

// TestRetrieveSales appends sales straight to the log (the importer has
// tests of its own) and retrieves them: in creation order, paged with
// next_url, filtered, deleted ones left out, sale_total computed from the
// rows, personal fields opened.
func TestRetrieveSales(t *testing.T) {
	e := newEnv(t)
	e.runProjections(retrievalproj.NewSales(e.keys))
	admin := e.userToken(e.admin, acmeHost)
	co := e.acme.ID
	up := func(u sale.Upserted) {
		t.Helper()
		e.appendTo(co, sale.Stream(co, u.SaleID), activityEvent(sale.TypeUpserted, u))
	}
	row := map[string]any{"product_id": "P-1", "quantity": 2, "unit_price": 500, "total": 1000}
	up(sale.Upserted{SaleID: "0001", ExternalID: "S-1", CustomerID: "c1", Created: true,
		Set:    map[string]any{"sale_date": "2024-05-06T04:08:09Z", "sale_state": "COMPLETE", "sale_discount": 100},
		Rows:   []sale.Row{{Key: "id:1", ProductID: "p1", Fields: row}},
		Sealed: e.sealFor(co, "c1", map[string]any{"sale_email": "ann@example.com"})})
	up(sale.Upserted{SaleID: "0002", ExternalID: "S-2", CustomerID: "c1", Created: true, Set: map[string]any{"sale_state": "CANCELLED", "sale_total": 50}})
	up(sale.Upserted{SaleID: "0003", ExternalID: "S-3", CustomerID: "c1", Created: true, Set: map[string]any{"sale_state": "COMPLETE", "sale_total": 70}})
	up(sale.Upserted{SaleID: "0004", ExternalID: "S-4", CustomerID: "c1", Created: true, Set: map[string]any{"sale_is_deleted": true}})
	e.waitProjections()

	first := e.retrieveAll(admin, "sales", withQuery("limit", "2"))
	second := e.followPage(admin, "sales", first.NextURL)
	got := append(first.Items, second.Items...)
	want := []map[string]any{
		{"sale_external_id": "S-1", "sale_date": "2024-05-06T04:08:09Z", "sale_state": "COMPLETE", "sale_discount": 100.0,
			"sale_email": "ann@example.com", "sale_is_deleted": false, "sale_total": 900.0,
			"sale_rows": []any{map[string]any{"product_id": "P-1", "quantity": 2.0, "unit_price": 500.0, "total": 1000.0}}},
		{"sale_external_id": "S-2", "sale_state": "CANCELLED", "sale_is_deleted": false, "sale_total": 50.0, "sale_rows": []any{}},
		{"sale_external_id": "S-3", "sale_state": "COMPLETE", "sale_is_deleted": false, "sale_total": 70.0, "sale_rows": []any{}},
	}
	if diff := cmp.Diff(want, got); diff != "" || second.NextURL != "" {
		t.Errorf("pages (-want +got):\n%s\nlast next_url %q", diff, second.NextURL)
	}
	// clientele projections rebuild sales: the same answers.
	if err := projections.Rebuild(context.Background(), e.pool, e.store, postgres.EventLog{}, retrievalproj.NewSales(e.keys), projections.KindAsync, nil); err != nil {
		t.Fatal(err)
	}
	e.waitProjections()
	if again := e.retrieveAll(admin, "sales").Items; !cmp.Equal(want, again) {
		t.Errorf("after a rebuild (-want +got):\n%s", cmp.Diff(want, again))
	}
	if got := e.retrieveAll(admin, "sales", withQuery("sale_state", "COMPLETE")).Items; len(got) != 2 || got[1]["sale_external_id"] != "S-3" {
		t.Errorf("filtered: %v", got)
	}
	if got := e.retrieveAll(admin, "sales", withQuery("sale_total", "50")).Items; len(got) != 1 || got[0]["sale_external_id"] != "S-2" {
		t.Errorf("filtered by a number: %v", got)
	}
}
