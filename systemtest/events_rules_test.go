package systemtest_test

import (
	"context"
	"net/http"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/clientele/clientele/commands"
	"github.com/clientele/clientele/domain/access"
	"github.com/clientele/clientele/domain/company"
	retrievalproj "github.com/clientele/clientele/projections/retrieval"
)

// eventsEnv is a server with the import worker and the customers,
// products and events projectors running, and the acme admin's token.
func eventsEnv(t *testing.T) (*env, string) {
	t.Helper()
	e := newEnv(t)
	e.runProjections(retrievalproj.NewCustomers(e.keys), retrievalproj.NewProducts(), retrievalproj.NewEvents(e.keys), retrievalproj.NewSales(e.keys))
	e.runImports()
	return e, e.userToken(e.admin, acmeHost)
}

// byKey indexes retrieved items by a field.
func byKey(items []map[string]any, key string) map[string]map[string]any {
	out := map[string]map[string]any{}
	for _, it := range items {
		if v, ok := it[key].(string); ok {
			out[v] = it
		}
	}
	return out
}

func TestEventRequiredFieldsAndTypes(t *testing.T) {
	e, token := eventsEnv(t)
	if _, err := e.cmds.UpdateCompanySettings.Handle(context.Background(), commands.UpdateCompanySettings{
		Principal: access.System(e.acme.ID), CompanyID: e.acme.ID,
		Change: company.SettingsChange{CustomEventTypes: &[]string{"LOYALTY_POINTS"}},
	}); err != nil {
		t.Fatal(err)
	}
	e.importAll(token, "/api/customers/upload/", `[{"email": "a@x.com"}]`)
	got := e.importAll(token, "/api/events/upload/", `[
		{"type": "BROWSE", "date": "2025-01-02", "email": "a@x.com", "label": "home"},
		{"date": "2025-01-02", "email": "a@x.com", "label": "home"},
		{"type": "browse", "date": "2025-01-02", "email": "a@x.com", "label": "home"},
		{"type": "NO_SUCH_TYPE", "date": "2025-01-02", "email": "a@x.com"},
		{"type": "LOYALTY_POINTS", "date": "2025-01-02", "email": "a@x.com"},
		{"type": "BROWSE", "email": "a@x.com", "label": "home"},
		{"type": "BROWSE", "date": "2025-01-02", "label": "home"},
		{"type": "BROWSE", "date": "2025-01-02", "email": "a@x.com"},
		{"type": "ORDER_SHIPPED", "date": "2025-01-02", "email": "a@x.com", "sale_id": "S1"},
		{"type": "SENTIMENT", "date": "2025-01-02", "email": "a@x.com", "sentiment_value": "good"},
		{"type": "SENTIMENT", "date": "2025-01-02", "email": "a@x.com", "sentiment_value": 8},
		{"type": "MAIL_SUBSCRIBE", "date": "2025-01-02", "email": "a@x.com", "mailing_lists": []},
		{"type": "BROWSE", "date": "2025-01-02", "email": "nobody@x.com", "label": "home"},
		{"type": "BROWSE", "date": "2025-01-02", "email": "a@x.com", "label": "home", "colour": "red", "tags": {"a": 1}},
		{"type": "BROWSE", "date": "2025-01-02", "customer_token": "tok-1", "label": "home"}
	]`)
	want := []rejection{{1, "type"}, {2, "type"}, {3, "type"}, {5, "date"}, {6, ""}, {7, ""}, {8, "tracking_number"},
		{9, "sentiment_value"}, {11, "mailing_lists"}, {12, "email"}, {13, "tags"}, {14, "customer_token"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("rejections (-want +got):\n%s", diff)
	}
	events := e.retrieveAll(token, "events").Items
	var types []any
	for _, ev := range events {
		types = append(types, ev["type"])
	}
	if diff := cmp.Diff([]any{"BROWSE", "LOYALTY_POINTS", "SENTIMENT"}, types); diff != "" {
		t.Errorf("stored events (-want +got):\n%s", diff)
	}
	// globex did not define the type.
	globex := e.userToken(e.globexAd, globexHost)
	for _, up := range []struct{ path, body string }{
		{"/api/customers/upload/", `[{"email": "g@x.com"}]`},
		{"/api/events/upload/", `[{"type": "LOYALTY_POINTS", "date": "2025-01-02", "email": "g@x.com"}]`},
	} {
		run := e.mustUpload(globex, up.path, host(globexHost), rawBody(up.body))
		a, _ := e.waitRun(globex, run, host(globexHost))
		if up.path == "/api/events/upload/" && (len(a.Import.Rejections) != 1 || a.Import.Rejections[0].Reason == "") {
			t.Errorf("another company's type: %+v, want it rejected", a.Import)
		}
	}
}

func TestEventSubscriptionsChangeCustomers(t *testing.T) {
	e, token := eventsEnv(t)
	e.importAll(token, "/api/customers/upload/", `[
		{"email": "a@x.com", "mailing_lists": ["news", "offers"], "can_email": false},
		{"phone_number": "+358401234567", "can_sms": true}
	]`)
	got := e.importAll(token, "/api/events/", `{"events": [
		{"type": "MAIL_SUBSCRIBE", "date": "2025-01-02T10:00:00", "email": "a@x.com", "mailing_lists": ["vip"], "first_name": "Ann"},
		{"type": "MAIL_UNSUBSCRIBE", "date": "2025-01-02T11:00:00", "email": "a@x.com", "mailing_lists": "offers"},
		{"type": "MAIL_SUBSCRIBE", "date": "2025-01-02T12:00:00", "email": "new@x.com", "mailing_lists": ["news"]},
		{"type": "MAIL_UNSUBSCRIBE", "date": "2025-01-02T12:30:00", "email": "new@x.com", "mailing_lists": ["_"]},
		{"type": "SMS_UNSUBSCRIBE", "date": "2025-01-02T13:00:00", "phone_number": "+358 40 1234567"},
		{"type": "SMS_SUBSCRIBE", "date": "2025-01-02T14:00:00", "phone_number": "+358409876543"}
	]}`)
	if len(got) != 0 {
		t.Fatalf("rejections %v", got)
	}
	customers := e.retrieveAll(token, "customers").Items
	byEmail, byPhone := byKey(customers, "email"), byKey(customers, "phone_number")
	a := byEmail["a@x.com"]
	if a["can_email"] != true || a["first_name"] != "Ann" || !cmp.Equal(a["mailing_lists"], []any{"news", "vip"}) {
		t.Errorf("subscribed, then left offers: %v", a)
	}
	n := byEmail["new@x.com"]
	if n == nil || n["can_email"] != false || !cmp.Equal(n["mailing_lists"], []any{}) || n["can_sms"] != false {
		t.Errorf("created by MAIL_SUBSCRIBE, then left every list: %v", n)
	}
	if p := byPhone["+358401234567"]; p["can_sms"] != false {
		t.Errorf("SMS_UNSUBSCRIBE: %v", p)
	}
	if p := byPhone["+358409876543"]; p == nil || p["can_sms"] != true || p["can_email"] != false {
		t.Errorf("created by SMS_SUBSCRIBE: %v", p)
	}
	if len(customers) != 4 {
		t.Errorf("%d customers, want 4", len(customers))
	}
}

func TestEventIDsAndDeletion(t *testing.T) {
	e, token := eventsEnv(t)
	e.importAll(token, "/api/customers/upload/", `[{"external_id": "C1", "email": "a@x.com"}]`)
	e.importAll(token, "/api/events/upload/", `[
		{"type": "BROWSE", "date": "2025-01-02", "customer_id": "C1", "label": "one"},
		{"type": "BROWSE", "date": "2025-01-03", "customer_id": "C1", "label": "two"},
		{"type": "BROWSE", "date": "2025-01-04T10:00:00+02:00", "customer_id": "C1", "label": "three", "tags": ["b", "a", "b"]}
	]`)
	events := e.retrieveAll(token, "events").Items
	if len(events) != 3 {
		t.Fatalf("%d events, want 3", len(events))
	}
	ids := map[string]float64{}
	for i, ev := range events {
		ids[ev["label"].(string)] = ev["id"].(float64)
		if i > 0 && ev["id"].(float64) <= events[i-1]["id"].(float64) {
			t.Errorf("ids not increasing: %v", events)
		}
	}
	three := events[2]
	want := map[string]any{"id": ids["three"], "type": "BROWSE", "date": "2025-01-04T08:00:00Z", "customer_id": "C1", "label": "three", "tags": []any{"a", "b"}, "is_deleted": false}
	if diff := cmp.Diff(want, three); diff != "" {
		t.Errorf("retrieved event (-want +got):\n%s", diff)
	}
	got := e.importAll(token, "/api/events/upload/", `[{"id": `+num(ids["two"])+`, "is_deleted": true}, {"id": 999, "is_deleted": true}]`)
	if diff := cmp.Diff([]rejection{{1, "id"}}, got); diff != "" {
		t.Errorf("deletion rejections (-want +got):\n%s", diff)
	}
	left := e.retrieveAll(token, "events").Items
	if len(left) != 2 || left[0]["label"] != "one" || left[1]["label"] != "three" {
		t.Errorf("after deleting two: %v", left)
	}
	// A later event gets a new id, above every earlier one.
	e.importAll(token, "/api/events/upload/", `[{"type": "BROWSE", "date": "2025-01-05", "email": "a@x.com", "label": "four"}]`)
	after := e.retrieveAll(token, "events", withQuery("label", "four")).Items
	if len(after) != 1 || after[0]["id"].(float64) <= ids["three"] {
		t.Errorf("event four: %v", after)
	}
}

func TestEventProductLinkage(t *testing.T) {
	e, token := eventsEnv(t)
	e.importAll(token, "/api/customers/upload/", `[{"external_id": "C1"}]`)
	e.importAll(token, "/api/products/upload/", `[{"external_id": "P1", "price": 1000, "sku": "SKU-1", "ean": ["111", "112"], "title": "Mug"}]`)
	got := e.importAll(token, "/api/events/upload/", `[
		{"type": "BASKET_ADD", "date": "2025-01-02", "customer_id": "C1", "product_id": "P1", "title": "ignored"},
		{"type": "BASKET_ADD", "date": "2025-01-02", "customer_id": "C1", "sku": "SKU-1"},
		{"type": "BROWSE", "date": "2025-01-02", "customer_id": "C1", "product_ean": "112"},
		{"type": "BASKET_ADD", "date": "2025-01-02", "customer_id": "C1", "product_id": 55, "title": "Plate", "price": "450.0"},
		{"type": "BROWSE", "date": "2025-01-02", "customer_id": "C1", "product_ean": "999", "title": "Bowl"},
		{"type": "BASKET_ADD", "date": "2025-01-02", "customer_id": "C1", "sku": "SKU-9"},
		{"type": "BASKET_ADD", "date": "2025-01-02", "customer_id": "C1", "product_id": "P7", "price": 10.5}
	]`)
	if diff := cmp.Diff([]rejection{{6, "price"}}, got); diff != "" {
		t.Errorf("rejections (-want +got):\n%s", diff)
	}
	var linked []any
	for _, ev := range e.retrieveAll(token, "events").Items {
		linked = append(linked, ev["product_id"])
	}
	if diff := cmp.Diff([]any{"P1", "P1", "P1", "55", "ean:999", "sku:SKU-9"}, linked); diff != "" {
		t.Errorf("linked products (-want +got):\n%s", diff)
	}
	// The real product of ean 999, imported later, is another product.
	e.importAll(token, "/api/products/upload/", `[{"external_id": "REAL999", "price": 100, "ean": "999"}]`)
	products := byExternalID(e.retrieveAll(token, "products").Items)
	if p := products["P1"]; p["title"] != "Mug" {
		t.Errorf("an event changed an existing product: %v", p)
	}
	if p := products["55"]; p["title"] != "Plate" || p["price"] != float64(450) || p["currency"] != "EUR" {
		t.Errorf("product created from an event: %v", p)
	}
	if p := products["ean:999"]; p == nil || p["title"] != "Bowl" || p["ean"] != "999" {
		t.Errorf("synthetic product from an ean: %v", p)
	}
	if products["sku:SKU-9"] == nil || products["REAL999"] == nil || len(products) != 5 {
		t.Errorf("products: %v", products)
	}
	// From now on the ean finds the real product.
	e.importAll(token, "/api/events/upload/", `[{"type": "BROWSE", "date": "2025-01-03", "customer_id": "C1", "product_ean": "999"}]`)
	last := e.retrieveAll(token, "events", withQuery("date", "2025-01-03T00:00:00Z")).Items
	if len(last) != 1 || last[0]["product_id"] != "REAL999" {
		t.Errorf("ean 999 after the real product: %v", last)
	}
}

func TestEventsCSVAndWrongCustomer(t *testing.T) {
	e, token := eventsEnv(t)
	e.importAll(token, "/api/customers/upload/", `[{"external_id": "C1", "email": "a@x.com"}, {"external_id": "C2"}]`)
	e.importAll(token, "/api/customers/upload/", `[{"external_id": "C2", "is_deleted": true}]`)
	got := e.importAll(token, "/api/events/upload/", "type;date;customer_id;label;sentiment_value\nBROWSE;2025-01-02;C1;csv;\nSENTIMENT;2025-01-02;C1;;7\nBROWSE;2025-01-02;C2;gone;\n",
		withHeader("Content-Type", "text/csv"))
	if diff := cmp.Diff([]rejection{{2, ""}}, got); diff != "" {
		t.Errorf("rejections (-want +got):\n%s", diff)
	}
	events := e.retrieveAll(token, "events").Items
	if len(events) != 2 || events[1]["sentiment_value"] != float64(7) || events[0]["label"] != "csv" {
		t.Errorf("events from CSV: %v", events)
	}
}

func TestDataQueryDeletesEvents(t *testing.T) {
	e, token := eventsEnv(t)
	e.importAll(token, "/api/customers/upload/", `[{"external_id": "C1"}]`)
	e.importAll(token, "/api/events/upload/", `[
		{"type": "BROWSE", "date": "2025-01-02", "customer_id": "C1", "label": "a", "source": "web"},
		{"type": "BROWSE", "date": "2025-01-02", "customer_id": "C1", "label": "b"},
		{"type": "SENTIMENT", "date": "2025-01-02", "customer_id": "C1", "sentiment_value": 3, "source": "web"}
	]`)
	res := e.do(http.MethodPost, "/api/data/query/", bearer(token), jsonBody(map[string]any{
		"datatype": "events", "match": map[string]any{"type": "BROWSE", "source.exists": false}, "update": map[string]any{"is_deleted": true},
	}))
	if res.status != http.StatusOK {
		t.Log(e.logs.String())
	}
	res.wantStatus(t, http.StatusOK)
	var a struct {
		Matched, Updated int
		RunID            string `json:"run_id"`
	}
	res.decode(t, &a)
	if a.Matched != 1 || a.Updated != 1 || a.RunID == "" {
		t.Fatalf("answer %s", res.body)
	}
	if run, _ := e.waitRun(token, a.RunID); run.Import.State != "completed" {
		t.Fatalf("run %+v", run)
	}
	e.waitProjections()
	var labels []any
	for _, ev := range e.retrieveAll(token, "events").Items {
		labels = append(labels, ev["label"])
	}
	if diff := cmp.Diff([]any{"a", nil}, labels); diff != "" {
		t.Errorf("events left (-want +got):\n%s", diff)
	}
	e.do(http.MethodPost, "/api/data/query/", bearer(token), jsonBody(map[string]any{
		"datatype": "events", "match": map[string]any{"type": "BROWSE"}, "update": map[string]any{"label": "x"},
	})).wantError(t, http.StatusUnprocessableEntity, "validation_error")
	e.do(http.MethodPost, "/api/data/query/", bearer(token), rawBody(`{"datatype": `)).wantError(t, http.StatusBadRequest, "invalid_request")
}

func TestDataQueryUpdatesCustomersAndProducts(t *testing.T) {
	e, token := eventsEnv(t)
	e.importAll(token, "/api/customers/upload/", `[{"email": "a@x.com", "city": "Espoo"}, {"phone_number": "+358401234567", "city": "Espoo"}, {"email": "c@x.com", "city": "Turku"}]`)
	e.importAll(token, "/api/products/upload/", `[{"external_id": "P1", "price": 100, "brand": "Old"}, {"external_id": "P2", "price": 100}]`)
	query := func(body map[string]any) {
		t.Helper()
		res := e.do(http.MethodPost, "/api/data/query/", bearer(token), jsonBody(body))
		res.wantStatus(t, http.StatusOK)
		var a struct {
			RunID string `json:"run_id"`
		}
		res.decode(t, &a)
		e.waitRun(token, a.RunID)
	}
	query(map[string]any{"datatype": "customers", "match": map[string]any{"city": "Espoo"}, "update": map[string]any{"tags.add": []string{"local"}}})
	query(map[string]any{"datatype": "products", "match": map[string]any{"brand.exists": true}, "update": map[string]any{"visible": false}})
	e.waitProjections()
	var tagged int
	for _, c := range e.retrieveAll(token, "customers").Items {
		if cmp.Equal(c["tags"], []any{"local"}) {
			tagged++
		} else if c["city"] == "Espoo" {
			t.Errorf("not updated: %v", c)
		}
	}
	if tagged != 2 {
		t.Errorf("%d customers tagged, want 2", tagged)
	}
	products := byExternalID(e.retrieveAll(token, "products").Items)
	if products["P1"]["visible"] != false || products["P2"]["visible"] == false {
		t.Errorf("products: %v", products)
	}
	e.do(http.MethodPost, "/api/data/query/", bearer(token), jsonBody(map[string]any{
		"datatype": "customers", "match": map[string]any{"city": "Espoo"}, "update": map[string]any{"country": "Finland"},
	})).wantError(t, http.StatusUnprocessableEntity, "validation_error")
}

// num writes an id read from JSON as the integer it is.
func num(f float64) string { return strconv.FormatInt(int64(f), 10) }

// The customer fields an event carries update its customer; "" is not
// given and removes nothing (the customer part of an event, as of a
// sale); an event that names its customer and changes nothing leaves the
// customer as it was.
func TestEventCustomerFields(t *testing.T) {
	e, token := eventsEnv(t)
	e.importAll(token, "/api/customers/upload/", `[{"external_id": "C1", "email": "a@x.com", "company": "Old Oy", "zip_code": "00100"}]`)
	got := e.importAll(token, "/api/events/upload/", `[
		{"type": "BROWSE", "date": "2025-01-02", "customer_id": "C1", "label": "home", "last_name": "Lind", "company": "", "country": "fi"},
		{"type": "BROWSE", "date": "2025-01-03", "email": "A@X.com", "label": "again"}
	]`)
	if len(got) != 0 {
		t.Fatalf("rejections %v", got)
	}
	c := byKey(e.retrieveAll(token, "customers").Items, "external_id")["C1"]
	if c["last_name"] != "Lind" || c["country"] != "FI" || c["zip_code"] != "00100" || c["company"] != "Old Oy" {
		t.Errorf("customer after the events: %v", c)
	}
	res := e.do(http.MethodGet, "/api/customers/"+c["id"].(string)+"/history/", bearer(token))
	res.wantStatus(t, http.StatusOK)
	var h struct {
		Events []struct {
			Fields []string `json:"fields"`
		} `json:"events"`
	}
	res.decode(t, &h)
	if len(h.Events) != 2 {
		t.Errorf("history: %s; want the import and the one event that changed something", res.body)
	}
}

// TestEventsSubscriptionsWithoutLists: Magento's newsletter sends
// MAIL_SUBSCRIBE and MAIL_UNSUBSCRIBE without mailing_lists. Without
// lists, a subscription grants can_email and leaves the lists as they
// are (and creates its customer); an unsubscription leaves every list and
// email marketing, as "_" does. A mailing_lists naming no list is still
// refused.
func TestEventsSubscriptionsWithoutLists(t *testing.T) {
	e, token := eventsEnv(t)
	e.importAll(token, "/api/customers/upload/", `[{"external_id": "42", "email": "aino@x.com", "mailing_lists": ["news", "offers"]}]`)
	got := e.importAll(token, "/api/events/upload/", `{"events": [
		{"email": "aino@x.com", "customer_id": "42", "type": "MAIL_SUBSCRIBE", "date": "2026-01-07 10:00:00", "store_id": "1"},
		{"email": "fan@x.com", "customer_id": "0", "type": "MAIL_SUBSCRIBE", "date": "2026-01-07 10:05:00", "store_id": "1"},
		{"email": "fan@x.com", "type": "MAIL_SUBSCRIBE", "date": "2026-01-07 10:06:00", "mailing_lists": ""}
	]}`)
	if diff := cmp.Diff([]rejection{{2, "mailing_lists"}}, got); diff != "" {
		t.Errorf("rejections (-want +got):\n%s", diff)
	}
	customers := byKey(e.retrieveAll(token, "customers").Items, "email")
	if a := customers["aino@x.com"]; a["can_email"] != true || !cmp.Equal(a["mailing_lists"], []any{"news", "offers"}) {
		t.Errorf("subscribed without lists: %v, want can_email and the lists kept", a)
	}
	if f := customers["fan@x.com"]; f == nil || f["can_email"] != true || f["external_id"] != nil {
		t.Errorf("a guest subscribing without lists: %v, want created with can_email", f)
	}
	if got := e.importAll(token, "/api/events/upload/", `[{"email": "aino@x.com", "customer_id": "42", "type": "MAIL_UNSUBSCRIBE", "date": "2026-01-07 10:10:00"}]`); len(got) != 0 {
		t.Fatalf("rejections %v", got)
	}
	a := byKey(e.retrieveAll(token, "customers").Items, "email")["aino@x.com"]
	if a["can_email"] != false || !cmp.Equal(a["mailing_lists"], []any{}) {
		t.Errorf("unsubscribed without lists: %v, want can_email false and every list left", a)
	}
}
