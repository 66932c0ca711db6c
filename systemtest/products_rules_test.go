package systemtest_test

import (
	"net/url"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestProductUpsert: a record changes only the keys it supplies; ""
// removes a key (a flag goes back to its default); null is absent; an
// update needs no price.
func TestProductUpsert(t *testing.T) {
	e, admin := catalogEnv(t)
	e.importAll(admin, productsPath, `[{"external_id": "P", "price": 100, "title": "A", "brand": "B", "visible": false, "tags": ["x"]}]`)
	e.importAll(admin, productsPath, `[{"external_id": "P", "title": "A2", "brand": "", "visible": "", "tags": null}]`)
	want := map[string]any{"external_id": "P", "price": 100.0, "currency": "EUR", "title": "A2", "tags": []any{"x"},
		"visible": true, "is_deleted": false, "exclude_from_recommendations": true}
	if diff := cmp.Diff(want, e.product(admin, "P")); diff != "" {
		t.Errorf("product (-want +got):\n%s", diff)
	}
}

// TestProductEndOfLifeAndDeletion: visible false is end-of-life, still
// retrieved (and filterable) with visible false; is_deleted true leaves
// the product out of retrieval, and false brings it back.
func TestProductEndOfLifeAndDeletion(t *testing.T) {
	e, admin := catalogEnv(t)
	e.importAll(admin, productsPath, `[{"external_id": "eol", "price": 1, "visible": false},
		{"external_id": "gone", "price": 1, "is_deleted": true}, {"external_id": "live", "price": 1}]`)
	got := byExternalID(e.retrieveAll(admin, "products").Items)
	if len(got) != 2 || got["eol"]["visible"] != false || got["live"]["visible"] != true || got["gone"] != nil {
		t.Errorf("products %v", got)
	}
	if got := e.retrieveAll(admin, "products", withQuery("visible", "false")).Items; len(got) != 1 || got[0]["external_id"] != "eol" {
		t.Errorf("visible=false: %v", got)
	}
	e.importAll(admin, productsPath, `[{"external_id": "live", "is_deleted": "true"}, {"external_id": "gone", "is_deleted": false}]`)
	got = byExternalID(e.retrieveAll(admin, "products").Items)
	if got["live"] != nil || got["gone"] == nil {
		t.Errorf("after deleting live and restoring gone: %v", got)
	}
}

// TestProductCSV: property-path columns make stock entries and versions
// (";" delimiter), numeric columns make lists, and values are coerced.
func TestProductCSV(t *testing.T) {
	e, admin := catalogEnv(t)
	csv := "external_id;price;visible;tags.0;tags.1;stock.0.shop_id;stock.0.quantity;stock.1.shop_id;stock.1.quantity;versions.language.fi.title;versions.shop_id.S1.price\n" +
		"P1;1050.00;false;b;a;S1;2;S2;3;Kenkä;900\n" +
		"P2;20;;;;;;;;;\n"
	if rej := e.importAll(admin, productsPath, csv, withHeader("Content-Type", "text/csv")); len(rej) != 0 {
		t.Fatalf("rejections %v", rej)
	}
	got := byExternalID(e.retrieveAll(admin, "products").Items)
	want := map[string]any{"external_id": "P1", "price": 1050.0, "currency": "EUR", "visible": false, "tags": []any{"a", "b"},
		"is_deleted": false, "exclude_from_recommendations": true,
		"stock": []any{map[string]any{"shop_id": "S1", "quantity": 2.0}, map[string]any{"shop_id": "S2", "quantity": 3.0}},
		"versions": map[string]any{"language": map[string]any{"fi": map[string]any{"title": "Kenkä"}},
			"shop_id": map[string]any{"S1": map[string]any{"price": 900.0}}}}
	if diff := cmp.Diff(want, got["P1"]); diff != "" {
		t.Errorf("P1 (-want +got):\n%s", diff)
	}
	if got["P2"]["price"] != 20.0 || got["P2"]["stock"] != nil {
		t.Errorf("P2 %v", got["P2"])
	}
}

// TestProductRetrieval: equality filters (a list field matches an
// element), paging with next_url, and only the company's own products.
func TestProductRetrieval(t *testing.T) {
	e, admin := catalogEnv(t)
	e.importAll(admin, productsPath, `[{"external_id": "A", "price": 1, "category": ["Shoes", "Sale"]},
		{"external_id": "B", "price": 2, "category": "Shoes"}, {"external_id": "C", "price": 2}]`)
	globex := e.userToken(e.globexAd, globexHost)
	run := e.mustUpload(globex, productsPath, rawBody(`[{"external_id": "A", "price": 5}]`), host(globexHost))
	e.waitRun(globex, run, host(globexHost))
	e.waitProjections()
	ids := func(r retrieval) []string {
		var out []string
		for _, it := range r.Items {
			out = append(out, it["external_id"].(string))
		}
		return out
	}
	if got := ids(e.retrieveAll(admin, "products", withQuery("category", "Shoes"))); !cmp.Equal(got, []string{"A", "B"}) {
		t.Errorf("category=Shoes: %v", got)
	}
	if got := ids(e.retrieveAll(admin, "products", withQuery("price", "2"))); !cmp.Equal(got, []string{"B", "C"}) {
		t.Errorf("price=2: %v", got)
	}
	page := e.retrieveAll(admin, "products", withQuery("limit", "2"))
	if got := ids(page); !cmp.Equal(got, []string{"A", "B"}) || page.NextURL == "" {
		t.Fatalf("first page %v next_url %q", got, page.NextURL)
	}
	u, err := url.Parse(page.NextURL)
	if err != nil || !u.IsAbs() || u.Host != acmeHost {
		t.Fatalf("next_url %q", page.NextURL)
	}
	last := e.retrieveAll(admin, "products", withQuery("limit", "2"), withQuery("cursor", u.Query().Get("cursor")))
	if got := ids(last); !cmp.Equal(got, []string{"C"}) || last.NextURL != "" {
		t.Errorf("last page %v, next_url %q", got, last.NextURL)
	}
}
