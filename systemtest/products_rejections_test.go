package systemtest_test

import (
	"fmt"
	"strings"
	"testing"
)

// TestProductRejections: each broken rule rejects its record alone,
// naming the field; valid records of the same upload are imported.
func TestProductRejections(t *testing.T) {
	e, admin := catalogEnv(t)
	e.importAll(admin, productsPath, `[{"external_id": "old", "price": 100}]`)
	ids := make([]string, 21)
	for i := range ids {
		ids[i] = fmt.Sprintf("%q", fmt.Sprint(i))
	}
	twenty, twentyOne := strings.Join(ids[:20], ","), strings.Join(ids, ",")
	tests := []struct{ name, record, field string }{
		{"external_id mandatory", `{"price": 100}`, "external_id"},
		{"price mandatory for a new product", `{"external_id": "new"}`, "price"},
		{"price cannot be removed", `{"external_id": "old", "price": ""}`, "price"},
		{"fraction of a minor unit", `{"external_id": "f1", "price": "10.50"}`, "price"},
		{"fraction of a minor unit as a float", `{"external_id": "f2", "price": 1050.5}`, "price"},
		{"fraction in another money field", `{"external_id": "f3", "price": 1, "sale_price": 0.5}`, "sale_price"},
		{"negative money", `{"external_id": "f4", "price": -1}`, "price"},
		{"money not a number", `{"external_id": "f5", "price": "ten"}`, "price"},
		{"boolean", `{"external_id": "b", "price": 1, "visible": "yes"}`, "visible"},
		{"url", `{"external_id": "u", "price": 1, "url": "shop.test/p"}`, "url"},
		{"datetime", `{"external_id": "d", "price": 1, "date": "01.06.2024"}`, "date"},
		{"integer", `{"external_id": "i", "price": 1, "salerow_priority": 1.5}`, "salerow_priority"},
		{"number", `{"external_id": "n", "price": 1, "recommendation_freq_days": "often"}`, "recommendation_freq_days"},
		{"recommendation set over 20", `{"external_id": "r", "price": 1, "recommendation_set_ids": [` + twentyOne + `]}`, "recommendation_set_ids"},
		{"list of objects", `{"external_id": "l", "price": 1, "images": [{"a": 1}]}`, "images"},
		{"bad value beside an unknown field", `{"external_id": "x", "price": 1, "colour": "red", "visible": "perhaps"}`, "visible"},
		{"stock entry without shop", `{"external_id": "s", "price": 1, "stock": [{"quantity": 1}]}`, "stock"},
		{"stock quantity", `{"external_id": "s", "price": 1, "stock": [{"shop_id": "S1", "quantity": "many"}]}`, "stock"},
		{"versions shape", `{"external_id": "v", "price": 1, "versions": ["fi"]}`, "versions"},
		{"version field type", `{"external_id": "v", "price": 1, "versions": {"shop_id": {"S1": {"price": 1.5}}}}`, "versions.shop_id.S1.price"},
		{"not versionable", `{"external_id": "v", "price": 1, "versions": {"language": {"fi": {"external_id": "x"}}}}`, "versions.language.fi.external_id"},
		{"currency", `{"external_id": "c", "price": 1, "currency": "euro"}`, "currency"},
		{"language", `{"external_id": "g", "price": 1, "language": "not a language"}`, "language"},
	}
	var records []string
	var want []rejection
	for i, tt := range tests {
		records = append(records, tt.record)
		want = append(want, rejection{i, tt.field})
	}
	records = append(records, `{"external_id": "ok", "price": 1, "recommendation_set_ids": [`+twenty+`]}`)
	got := e.importAll(admin, productsPath, "["+strings.Join(records, ",")+"]")
	for i, tt := range tests {
		if i >= len(got) || got[i] != want[i] {
			t.Errorf("%s: rejections %v, want %v", tt.name, got, want[i])
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d rejections, want %d: %v", len(got), len(want), got)
	}
	if p := e.product(admin, "ok"); len(p["recommendation_set_ids"].([]any)) != 20 {
		t.Errorf("20 recommendation ids: %v", p["recommendation_set_ids"])
	}
	if p := e.product(admin, "old"); p["price"] != 100.0 {
		t.Errorf("old product after rejected removal of its price: %v", p)
	}
}
