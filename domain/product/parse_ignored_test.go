package product_test

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/clientele/clientele/domain/company"
	"github.com/clientele/clientele/domain/product"
	"github.com/clientele/clientele/domain/values"
)

// TestParseIgnoresUnknownFields: a key that is no field of a product is
// ignored and listed, at the top (a plugin's own field, a company field,
// which products do not have, a key that looks like data, listed
// unnamed), in a version (named without its language code or shop id, so
// that every version's is one name), as an unknown kind of version, and
// in a stock entry; the known fields are kept. A known field with a bad
// value, or in a version where it cannot be, still rejects, naming it.
func TestParseIgnoresUnknownFields(t *testing.T) {
	p := product.NewParser(company.Company{ShortName: "ACME", Timezone: time.UTC.String()})
	r, err := p.Parse([]byte(`{"external_id": "a", "price": 100, "store_id": 1, "mage_type": "simple", "mage_child_ids": [1, 2],
		"my_configurable_min_price": "9.5", "ACME__x": 1, "Ann Smith": 2, "state": null,
		"stock": [{"shop_id": "s1", "quantity": 2, "store_id": 1}, {"shop_id": "s2", "quantity": 3, "store_id": 2, "warehouse": "w"}],
		"versions": {"language": {"fi": {"title": "T", "store_id": 1}, "sv": {"title": "S", "store_id": 2}},
			"shop_id": {"s1": {"price": 90, "mage_type": "x"}}, "store": {"1": {"title": "x"}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	want := values.Ignored{values.UnnamedField, "ACME__x", "mage_child_ids", "mage_type", "my_configurable_min_price",
		"stock.store_id", "stock.warehouse", "store_id",
		"versions.language.store_id", "versions.shop_id.mage_type", "versions.store"}
	if diff := cmp.Diff(want, r.Ignored); diff != "" {
		t.Errorf("ignored (-want +got):\n%s", diff)
	}
	wantChanges := product.Changes{Set: map[string]any{"price": int64(100)},
		Stock: []product.Stock{{ShopID: "s1", Quantity: 2}, {ShopID: "s2", Quantity: 3}},
		Versions: map[string]map[string]product.FieldChanges{
			"language": {"fi": {Set: map[string]any{"title": "T"}}, "sv": {Set: map[string]any{"title": "S"}}},
			"shop_id":  {"s1": {Set: map[string]any{"price": int64(90)}}},
		}}
	if diff := cmp.Diff(wantChanges, r.Changes); diff != "" {
		t.Errorf("changes (-want +got):\n%s", diff)
	}

	for name, tc := range map[string]struct{ in, field string }{
		"bad value beside an unknown field": {`{"external_id": "a", "store_id": 1, "price": "10.5"}`, "price"},
		"bad value in a version":            {`{"external_id": "a", "versions": {"language": {"fi": {"store_id": 1, "url": "ftp://x"}}}}`, "versions.language.fi.url"},
		"stock in a version":                {`{"external_id": "a", "versions": {"language": {"fi": {"stock": []}}}}`, "versions.language.fi.stock"},
		"external_id in a version":          {`{"external_id": "a", "versions": {"shop_id": {"s1": {"external_id": "b"}}}}`, "versions.shop_id.s1.external_id"},
		"stock entry without its shop":      {`{"external_id": "a", "stock": [{"store_id": 1, "quantity": 2}]}`, "stock"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := p.Parse([]byte(tc.in))
			var prob *product.Problem
			if !errors.As(err, &prob) || prob.Field != tc.field {
				t.Errorf("got %v, want a rejection of %s", err, tc.field)
			}
		})
	}
}
