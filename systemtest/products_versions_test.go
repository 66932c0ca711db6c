package systemtest_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestProductLocalisation: method A (the same external_id in another
// language carries only translated fields, stored as that language's
// version, without a price), method B (versions.language) and per-shop
// overrides (versions.shop_id), combined in one record and across
// uploads; retrieval shows the base record with its versions.
func TestProductLocalisation(t *testing.T) {
	e, admin := catalogEnv(t)
	rej := e.importAll(admin, productsPath, `[
		{"external_id": "P", "price": 1000, "language": "en", "title": "Shoe", "description": "A shoe",
		 "versions": {"language": {"sv": {"title": "Sko"}}, "shop_id": {"S1": {"price": 900, "url": "https://s1.test/p"}}}},
		{"external_id": "P", "language": "fi", "title": "Kenkä", "description": "Kenkä on"}]`)
	if len(rej) != 0 {
		t.Fatalf("rejections %v", rej)
	}
	e.importAll(admin, productsPath, `[
		{"external_id": "P", "language": "fi", "description": ""},
		{"external_id": "P", "versions": {"shop_id": {"S2": {"currency": "SEK", "price": 9000}, "S1": {"url": ""}}}}]`)
	want := map[string]any{"external_id": "P", "price": 1000.0, "currency": "EUR", "language": "en", "title": "Shoe",
		"description": "A shoe", "visible": true, "is_deleted": false, "exclude_from_recommendations": true,
		"versions": map[string]any{
			"language": map[string]any{"fi": map[string]any{"title": "Kenkä"}, "sv": map[string]any{"title": "Sko"}},
			"shop_id":  map[string]any{"S1": map[string]any{"price": 900.0}, "S2": map[string]any{"currency": "SEK", "price": 9000.0}},
		}}
	if diff := cmp.Diff(want, e.product(admin, "P")); diff != "" {
		t.Errorf("product (-want +got):\n%s", diff)
	}
}

// TestProductStockMerge: stock merges by shop_id: entries not in the new
// data are kept, present ones overwritten, new shops added.
func TestProductStockMerge(t *testing.T) {
	e, admin := catalogEnv(t)
	e.importAll(admin, productsPath, `[{"external_id": "P", "price": 1, "stock": [{"shop_id": "S1", "quantity": 5}, {"shop_id": "S2", "quantity": 3}]}]`)
	e.importAll(admin, productsPath, `[{"external_id": "P", "stock": [{"shop_id": "S2", "quantity": 7}, {"shop_id": "S3", "quantity": 1.5}]}]`)
	want := []any{
		map[string]any{"shop_id": "S1", "quantity": 5.0},
		map[string]any{"shop_id": "S2", "quantity": 7.0},
		map[string]any{"shop_id": "S3", "quantity": 1.5},
	}
	if diff := cmp.Diff(want, e.product(admin, "P")["stock"]); diff != "" {
		t.Errorf("stock (-want +got):\n%s", diff)
	}
}
