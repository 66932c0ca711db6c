package product_test

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/clientele/clientele/domain/company"
	"github.com/clientele/clientele/domain/product"
)

func newLinkBook() *product.Book {
	n := 0
	return product.NewBook(func() string { n++; return fmt.Sprintf("p%d", n) }, "EUR")
}

func TestLinkByExternalIDCreatesFromDetails(t *testing.T) {
	b := newLinkBook()
	o := b.Link(product.Ref{ExternalID: "P1", SKU: "S1", Details: map[string]any{"title": "Mug", "price": int64(900)}})
	if o.Event == nil || !o.Event.Created || o.ExternalID != "P1" {
		t.Fatalf("outcome %+v: want P1 created", o)
	}
	want := map[string]any{"external_id": "P1", "title": "Mug", "price": int64(900), "currency": "EUR", "sku": "S1"}
	if diff := cmp.Diff(want, o.Event.Changes.Set); diff != "" {
		t.Errorf("created product (-want +got):\n%s", diff)
	}
	again := b.Link(product.Ref{ExternalID: "P1", Details: map[string]any{"title": "Other"}})
	if again.Event != nil || again.ProductID != o.ProductID {
		t.Errorf("second link %+v: want the same product unchanged", again)
	}
	bySKU := b.Link(product.Ref{SKU: "S1"})
	if bySKU.ProductID != o.ProductID {
		t.Errorf("sku S1 found %+v, want the product that declared it", bySKU)
	}
}

func TestLinkFallbacksAndSyntheticIDs(t *testing.T) {
	b := newLinkBook()
	b.Load(product.State{ID: "real", ExternalID: "R1", Version: 3})
	b.LoadKey(product.KeySKU, "S-R", "R1")
	if o := b.Link(product.Ref{SKU: "S-R", EAN: "123"}); o.ProductID != "real" || o.Event != nil {
		t.Errorf("sku of a stored product: %+v", o)
	}
	created := b.Link(product.Ref{EAN: "400"})
	if created.ExternalID != "ean:400" || created.Event == nil {
		t.Fatalf("unknown ean: %+v, want a synthetic ean:400 created", created)
	}
	if o := b.Link(product.Ref{EAN: "400"}); o.ProductID != created.ProductID || o.Event != nil {
		t.Errorf("second link of ean 400: %+v", o)
	}
	if o := b.Link(product.Ref{SKU: "S9"}); o.ExternalID != "sku:S9" {
		t.Errorf("unknown sku: %+v, want sku:S9", o)
	}
	// A later import of the real product keeps its own external_id, and
	// takes the key: it is the one the ean finds from then on.
	p := product.NewParser(company.Company{})
	r, err := p.Parse([]byte(`{"external_id": "REAL400", "price": 100, "ean": "400"}`))
	if err != nil {
		t.Fatal(err)
	}
	real, err := b.Decide(r)
	if err != nil || real.Event == nil || real.ProductID == created.ProductID {
		t.Fatalf("real product: %+v, %v", real, err)
	}
	if o := b.Link(product.Ref{EAN: "400"}); o.ProductID != real.ProductID {
		t.Errorf("ean 400 after the real import finds %s, want %s", o.ProductID, real.ProductID)
	}
	want := []product.KeyChange{{Kind: "ean", Value: "400", ExternalID: "REAL400"}, {Kind: "sku", Value: "S9", ExternalID: "sku:S9"}}
	if diff := cmp.Diff(want, b.KeyChanges()); diff != "" {
		t.Errorf("key changes (-want +got):\n%s", diff)
	}
}
