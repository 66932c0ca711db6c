package systemtest_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestShopFields: every field of decisions.md's Shops, normalised, with
// is_hidden defaulting to false and company fields under the short name.
func TestShopFields(t *testing.T) {
	e, admin := catalogEnv(t)
	sn := e.acme.ShortName
	rej := e.importAll(admin, "/api/shops/upload/", `{"shops": [
		{"external_id": 12, "name": "Main Street", "email": "Main@Shop.Example", "shop_type": "Offline",
		 "phone_number": "09 123 4567", "street_address": "Main Street 1", "city": "Helsinki", "country": "fi",
		 "`+strings.ToLower(sn)+`__region": "south"},
		{"external_id": "web", "shop_type": "online", "country": "uk", "is_hidden": "true"}]}`)
	if len(rej) != 0 {
		t.Fatalf("rejections %v", rej)
	}
	got := byExternalID(e.retrieveAll(admin, "shops").Items)
	want := map[string]map[string]any{
		"12": {"external_id": "12", "name": "Main Street", "email": "main@shop.example", "shop_type": "offline",
			"phone_number": "09 123 4567", "street_address": "Main Street 1", "city": "Helsinki", "country": "FI",
			"is_hidden": false, sn + "__region": "south"},
		"web": {"external_id": "web", "shop_type": "online", "country": "GB", "is_hidden": true},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("shops (-want +got):\n%s", diff)
	}
}

// TestShopUpsert: a record changes only the keys it supplies, "" removes
// a key (is_hidden: back to its default), null is absent, and the same
// external_id is the same shop (also within one upload).
func TestShopUpsert(t *testing.T) {
	e, admin := catalogEnv(t)
	e.importAll(admin, "/api/shops/upload/", `[{"external_id": "S1", "name": "One", "city": "Turku", "email": "a@b.fi", "is_hidden": true},
		{"external_id": "S1", "country": "SE"}]`)
	e.importAll(admin, "/api/shops/upload/", `[{"external_id": "S1", "name": "Uno", "city": "", "email": null, "is_hidden": ""}]`)
	got := e.retrieveAll(admin, "shops").Items
	want := []map[string]any{{"external_id": "S1", "name": "Uno", "email": "a@b.fi", "country": "SE", "is_hidden": false}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("shops (-want +got):\n%s", diff)
	}
}

// TestShopRejections: each broken rule rejects its record alone, naming
// the field; the valid records of the upload are imported, those with
// unknown fields (ignored) too.
func TestShopRejections(t *testing.T) {
	e, admin := catalogEnv(t)
	rej := e.importAll(admin, "/api/shops/upload/", `[
		{"name": "no id"},
		{"external_id": "A", "shop_type": "kiosk"},
		{"external_id": "B", "country": "Finland"},
		{"external_id": "C", "email": "not an address"},
		{"external_id": "D", "is_hidden": "maybe"},
		{"external_id": "E", "opening_hours": "9-17"},
		{"external_id": "F", "OTHER__x": 1},
		{"external_id": "G", "name": ["a", "b"]},
		{"external_id": "ok"}]`)
	want := []rejection{{0, "external_id"}, {1, "shop_type"}, {2, "country"}, {3, "email"}, {4, "is_hidden"}, {7, "name"}}
	if diff := cmp.Diff(want, rej); diff != "" {
		t.Errorf("rejections (-want +got):\n%s", diff)
	}
	want2 := []map[string]any{{"external_id": "E", "is_hidden": false}, {"external_id": "F", "is_hidden": false}, {"external_id": "ok", "is_hidden": false}}
	if diff := cmp.Diff(want2, e.retrieveAll(admin, "shops").Items); diff != "" {
		t.Errorf("shops (-want +got):\n%s", diff)
	}
}

// TestShopCSVAndRetrieval: a CSV upload; retrieval filters by any field,
// pages with next_url, and shows only the company's own shops.
func TestShopCSVAndRetrieval(t *testing.T) {
	e, admin := catalogEnv(t)
	e.importAll(admin, "/api/shops/upload/", "external_id;name;shop_type;is_hidden\nS1;One;online;false\nS2;Two;offline;1\nS3;Three;online;\n",
		withHeader("Content-Type", "text/csv"))
	globex := e.userToken(e.globexAd, globexHost)
	run := e.mustUpload(globex, "/api/shops/upload/", rawBody(`[{"external_id": "S1", "name": "Globex"}]`), host(globexHost))
	e.waitRun(globex, run, host(globexHost))
	e.waitProjections()

	if got := e.retrieveAll(admin, "shops").Items; len(got) != 3 {
		t.Errorf("acme sees %d shops, want its own 3", len(got))
	}
	ids := func(items []map[string]any) []string {
		var out []string
		for _, it := range items {
			out = append(out, it["external_id"].(string))
		}
		return out
	}
	if got := ids(e.retrieveAll(admin, "shops", withQuery("shop_type", "online")).Items); !cmp.Equal(got, []string{"S1", "S3"}) {
		t.Errorf("shop_type=online: %v", got)
	}
	if got := ids(e.retrieveAll(admin, "shops", withQuery("is_hidden", "true")).Items); !cmp.Equal(got, []string{"S2"}) {
		t.Errorf("is_hidden=true: %v", got)
	}
	page := e.retrieveAll(admin, "shops", withQuery("limit", "2"))
	if got := ids(page.Items); !cmp.Equal(got, []string{"S1", "S2"}) || !strings.HasPrefix(page.NextURL, "http://"+acmeHost+"/api/data/shops/?cursor=") {
		t.Fatalf("first page %v, next_url %q", got, page.NextURL)
	}
	res := e.do(http.MethodGet, strings.TrimPrefix(page.NextURL, "http://"+acmeHost), bearer(admin))
	res.wantStatus(t, http.StatusOK)
	if !strings.Contains(string(res.body), `"S3"`) || strings.Contains(string(res.body), "next_url") {
		t.Errorf("last page %s", res.body)
	}
	for _, p := range []string{"/data/shops", "/api/data/shops"} {
		e.do(http.MethodGet, p, bearer(admin)).wantStatus(t, http.StatusOK)
	}
}
