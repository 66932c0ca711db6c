package systemtest_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/clientele/clientele/commands"
	"github.com/clientele/clientele/domain/access"
	"github.com/clientele/clientele/domain/company"
)

const productsPath = "/api/products/upload/"

// product retrieves the acme product with the external id, failing the
// test when retrieval does not show it.
func (e *env) product(token, externalID string) map[string]any {
	e.t.Helper()
	got := e.retrieveAll(token, "products", withQuery("external_id", externalID)).Items
	if len(got) != 1 {
		e.t.Fatalf("products with external_id %s: %v", externalID, got)
	}
	return got[0]
}

// TestProductFields: every field of the Product table with its type, the
// loose forms clients send normalised, and the defaults (currency the
// company's, visible true, is_deleted false, exclude_from_recommendations
// true) in retrieval.
func TestProductFields(t *testing.T) {
	e, admin := catalogEnv(t)
	rej := e.importAll(admin, productsPath, `{"products": [{"external_id": 55, "price": "1050", "type": "shoe",
		"category": "Shoes", "category_id": ["c1", "c2"], "datasource": "erp", "vendor": "V", "ean": 6417182000123,
		"sku": "SKU-1", "shop_id": "S1", "brand": "B", "title": "Runner", "image": "/img/1.jpg", "images": ["https://x.test/1.jpg"],
		"date": "2024-06-01T12:00:00+03:00", "url": "https://shop.test/p/55", "sale_price": 900.0, "lowest_price": "899.00",
		"price_before_campaign": 1200, "highest_price": 1300, "minimal_price": 800, "description": "Long", "short_description": "Short",
		"language": "en_US", "in_stock": "true", "recommendation_set_ids": ["56", "57"], "recommendation_freq_days": "7.5",
		"rating": "4/5", "salerow_priority": "3", "tags": ["b", "a", "b"], "main_product_ids": ["50"], "unit": "pcs", "weight": "1 kg"}]}`)
	if len(rej) != 0 {
		t.Fatalf("rejections %v", rej)
	}
	want := map[string]any{"external_id": "55", "price": 1050.0, "currency": "EUR", "type": "shoe",
		"category": "Shoes", "category_id": []any{"c1", "c2"}, "datasource": "erp", "vendor": "V", "ean": "6417182000123",
		"sku": "SKU-1", "shop_id": "S1", "brand": "B", "title": "Runner", "image": "/img/1.jpg", "images": []any{"https://x.test/1.jpg"},
		"date": "2024-06-01T09:00:00Z", "url": "https://shop.test/p/55", "sale_price": 900.0, "lowest_price": 899.0,
		"price_before_campaign": 1200.0, "highest_price": 1300.0, "minimal_price": 800.0, "description": "Long", "short_description": "Short",
		"language": "en", "in_stock": true, "recommendation_set_ids": []any{"56", "57"}, "recommendation_freq_days": 7.5,
		"rating": "4/5", "salerow_priority": 3.0, "tags": []any{"a", "b"}, "main_product_ids": []any{"50"}, "unit": "pcs", "weight": "1 kg",
		"visible": true, "is_deleted": false, "exclude_from_recommendations": true}
	if diff := cmp.Diff(want, e.product(admin, "55")); diff != "" {
		t.Errorf("product (-want +got):\n%s", diff)
	}
}

// TestProductCompanyDefaults: a product without currency gets the
// company's, and a datetime without zone is read in the company's
// timezone.
func TestProductCompanyDefaults(t *testing.T) {
	e, admin := catalogEnv(t)
	tz, cur := "Europe/Helsinki", "SEK"
	if _, err := e.cmds.UpdateCompanySettings.Handle(context.Background(), commands.UpdateCompanySettings{
		Principal: access.System(e.acme.ID), CompanyID: e.acme.ID,
		Change: company.SettingsChange{Timezone: &tz, Currency: &cur}}); err != nil {
		t.Fatal(err)
	}
	e.importAll(admin, productsPath, `[{"external_id": "P1", "price": 100, "date": "2024-06-01 12:00:00"},
		{"external_id": "P2", "price": 100, "currency": "usd", "date": "2024-06-01"}]`)
	for id, want := range map[string][2]string{"P1": {"SEK", "2024-06-01T09:00:00Z"}, "P2": {"USD", "2024-05-31T21:00:00Z"}} {
		p := e.product(admin, id)
		if p["currency"] != want[0] || p["date"] != want[1] {
			t.Errorf("%s: currency %v date %v, want %v", id, p["currency"], p["date"], want)
		}
	}
}
