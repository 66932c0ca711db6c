package product_test

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/clientele/clientele/domain/company"
	"github.com/clientele/clientele/domain/product"
)

func TestDecide(t *testing.T) {
	p := product.NewParser(company.Company{})
	parse := func(s string) product.Record {
		t.Helper()
		r, err := p.Parse([]byte(s))
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	b := product.NewBook(func() string { return "id-1" }, "EUR")
	b.Load(product.State{ID: "old", ExternalID: "E", Version: 2, Language: "en"})

	// New product: price required, currency defaulted.
	var prob *product.Problem
	if _, err := b.Decide(parse(`{"external_id": "N", "title": "x"}`)); !errors.As(err, &prob) || prob.Field != "price" {
		t.Errorf("new product without price: %v", err)
	}
	o, err := b.Decide(parse(`{"external_id": "N", "price": 5, "language": "fi"}`))
	if err != nil || !o.Event.Created || o.Event.Changes.Set["currency"] != "EUR" {
		t.Errorf("new product: %+v %v", o.Event, err)
	}

	// Method A: another language is a translation; price not needed.
	o, err = b.Decide(parse(`{"external_id": "E", "language": "fi", "title": "Kenkä", "is_deleted": false, "stock": [{"shop_id": "S", "quantity": 1}]}`))
	if err != nil {
		t.Fatal(err)
	}
	want := product.Changes{Set: map[string]any{"is_deleted": false}, Stock: []product.Stock{{ShopID: "S", Quantity: 1}},
		Versions: map[string]map[string]product.FieldChanges{"language": {"fi": {Set: map[string]any{"title": "Kenkä"}}}}}
	if diff := cmp.Diff(want, o.Event.Changes); diff != "" {
		t.Errorf("translation (-want +got):\n%s", diff)
	}
	// The base language updates the base.
	o, _ = b.Decide(parse(`{"external_id": "E", "language": "en", "title": "Shoe"}`))
	if o.Event.Changes.Set["title"] != "Shoe" || len(o.Event.Changes.Versions) != 0 {
		t.Errorf("base update: %+v", o.Event.Changes)
	}
	// Nothing to change: accepted, no event.
	if o, err := b.Decide(parse(`{"external_id": "E"}`)); err != nil || o.Event != nil {
		t.Errorf("empty update: %+v %v", o, err)
	}
	touched := b.Touched(map[string]int64{"old": 2})
	if len(touched) != 2 {
		t.Errorf("touched %+v", touched)
	}
}
