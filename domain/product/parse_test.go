package product_test

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/clientele/clientele/domain/company"
	"github.com/clientele/clientele/domain/product"
)

func TestParseValues(t *testing.T) {
	p := product.NewParser(company.Company{Timezone: "Europe/Helsinki"})
	tests := []struct {
		name, in string
		field    string
		want     any // the value of field in Set; a string is a rejection's field
		rejected bool
	}{
		{"money integer", `{"external_id": "a", "price": 1050}`, "price", int64(1050), false},
		{"money float", `{"external_id": "a", "price": 1050.0}`, "price", int64(1050), false},
		{"money decimal string", `{"external_id": "a", "price": "1050.00"}`, "price", int64(1050), false},
		{"money fraction", `{"external_id": "a", "price": "10.5"}`, "price", nil, true},
		{"money negative", `{"external_id": "a", "price": -5}`, "price", nil, true},
		{"money ratio", `{"external_id": "a", "price": "21/2"}`, "price", nil, true},
		{"naive datetime in company timezone", `{"external_id": "a", "date": "2024-01-01T12:00:00"}`, "date", "2024-01-01T10:00:00Z", false},
		{"datetime with zone", `{"external_id": "a", "date": "2024-01-01 12:00:00.5Z"}`, "date", "2024-01-01T12:00:00.5Z", false},
		{"date only", `{"external_id": "a", "date": "2024-01-01"}`, "date", "2023-12-31T22:00:00Z", false},
		{"category string", `{"external_id": "a", "category": "x"}`, "category", "x", false},
		{"category list", `{"external_id": "a", "category": ["x", ""]}`, "category", []string{"x"}, false},
		{"tags a set", `{"external_id": "a", "tags": ["b", "a", "a"]}`, "tags", []string{"a", "b"}, false},
		{"images keep order", `{"external_id": "a", "images": ["b", "a"]}`, "images", []string{"b", "a"}, false},
		{"boolean from CSV", `{"external_id": "a", "visible": "0"}`, "visible", false, false},
		{"language locale", `{"external_id": "a", "language": "fi-FI"}`, "language", "fi", false},
		{"currency", `{"external_id": "a", "currency": "sek"}`, "currency", "SEK", false},
		{"url", `{"external_id": "a", "url": "ftp://x.test"}`, "url", nil, true},
		{"integer from string", `{"external_id": "a", "salerow_priority": "4"}`, "salerow_priority", int64(4), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := p.Parse([]byte(tt.in))
			var prob *product.Problem
			if tt.rejected {
				if !errors.As(err, &prob) || prob.Field != tt.field {
					t.Fatalf("got %+v, %v; want a rejection of %s", r, err, tt.field)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, r.Changes.Set[tt.field]); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseNested(t *testing.T) {
	p := product.NewParser(company.Company{Timezone: time.UTC.String()})
	r, err := p.Parse([]byte(`{"external_id": "a", "stock": [{"shop_id": 1, "quantity": "2"}, {"shop_id": "2", "quantity": 3}, {"shop_id": "1", "quantity": 4}],
		"versions": {"language": {"FI": {"title": "T", "description": ""}}, "shop_id": {"S1": {"price": "900"}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	want := product.Changes{Set: map[string]any{},
		Stock: []product.Stock{{ShopID: "1", Quantity: 4}, {ShopID: "2", Quantity: 3}},
		Versions: map[string]map[string]product.FieldChanges{
			"language": {"fi": {Set: map[string]any{"title": "T"}, Unset: []string{"description"}}},
			"shop_id":  {"S1": {Set: map[string]any{"price": int64(900)}}},
		}}
	if diff := cmp.Diff(want, r.Changes); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
