package systemtest_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/clientele/clientele/eventstore/postgres"
	"github.com/clientele/clientele/projections/datasync"
	retrievalproj "github.com/clientele/clientele/projections/retrieval"
)

// storableEnv is a server with the import worker and every async
// projector the service runs, and the acme admin's token.
func storableEnv(t *testing.T) (*env, string) {
	t.Helper()
	e := newEnv(t)
	e.runProjections(retrievalproj.NewCustomers(e.keys), retrievalproj.NewShops(), retrievalproj.NewProducts(),
		retrievalproj.NewEvents(e.keys), retrievalproj.NewSales(e.keys), datasync.NewDatasync(e.keys, postgres.EventLog{}))
	e.runImports()
	return e, e.userToken(e.admin, acmeHost)
}

// retrieveExact reads the first page (up to 1,000) of /api/data/<key>/
// keeping every digit of numbers: a float64 cannot hold 1e131071, which
// the stores can.
func (e *env) retrieveExact(token, key string) []map[string]any {
	e.t.Helper()
	res := e.do(http.MethodGet, "/api/data/"+key+"/", bearer(token), withQuery("limit", "1000"))
	res.wantStatus(e.t, http.StatusOK)
	d := json.NewDecoder(bytes.NewReader(res.body))
	d.UseNumber()
	var page map[string][]map[string]any
	if err := d.Decode(&page); err != nil {
		e.t.Fatalf("the answer is not JSON: %v", err)
	}
	return page[key]
}

// TestUnstorableValuesAreRejections checks that a value PostgreSQL cannot
// store, in any entity's record and company fields included, is that
// record's rejection naming the field and never quoting the value. Before,
// a customer's number of 131,073 digits was accepted and stopped the
// customers projector for ever (value overflows numeric format), and a
// shop's, event's or sale's 1e-16384 failed its chunk's append on every
// retry, so the run never ended.
func TestUnstorableValuesAreRejections(t *testing.T) {
	e, token := storableEnv(t)
	e.importAll(token, "/api/customers/upload/", `[{"external_id": "C1", "email": "c1@example.com"}]`)
	e.importAll(token, "/api/products/upload/", `[{"external_id": "P1", "price": 100}]`)

	for _, tc := range []struct {
		name, path, bad, good, field, reason string
	}{
		{"customer company field over 131072 digits", "/api/customers/upload/",
			`{"external_id": "CZ-1", "email": "cz1@example.com", "ACME__x": 1e131072}`,
			`{"external_id": "CZ-2", "ACME__x": 1e131071}`, "ACME__x", "131072 digits"},
		{"shop company field of scale 16384", "/api/shops/upload/",
			`{"external_id": "S-bad", "ACME__x": 1e-16384}`,
			`{"external_id": "S-ok", "ACME__x": 1e-16383}`, "ACME__x", "16383 digits"},
		{"event company field of scale 16384", "/api/events/upload/",
			`{"type": "BROWSE", "date": "2025-01-02", "customer_id": "C1", "label": "bad", "ACME__x": 1e-16384}`,
			`{"type": "BROWSE", "date": "2025-01-02", "customer_id": "C1", "label": "ok", "ACME__x": -1e-16383}`, "ACME__x", "16383 digits"},
		{"sale company field of scale 16384", "/api/sales/upload/",
			`{"sale_external_id": "SA-bad", "sale_date": "2025-03-01", "sale_customer_id": "C1", "product_id": "P1", "quantity": 1, "unit_price": 100, "ACME__x": 1e-16384}`,
			`{"sale_external_id": "SA-ok", "sale_date": "2025-03-01", "sale_customer_id": "C1", "product_id": "P1", "quantity": 1, "unit_price": 100, "ACME__x": 1e-16383}`, "ACME__x", "16383 digits"},
		{"a zero of scale 20000", "/api/customers/upload/",
			`{"external_id": "CZ-3", "ACME__x": 1.` + strings.Repeat("0", 20000) + `}`,
			`{"external_id": "CZ-4", "ACME__x": 0e999999}`, "ACME__x", "16383 digits"},
		{"an exponent past the server's bound", "/api/shops/upload/",
			`{"external_id": "S-bad", "ACME__x": [0e1073741823]}`,
			`{"external_id": "S-ok", "ACME__x": [0e1073741822]}`, "ACME__x", "exponent"},
		{"numbers that print past 1 GiB", "/api/customers/upload/",
			`{"external_id": "CZ-5", "ACME__x": [` + strings.TrimSuffix(strings.Repeat("9e131071,", 9000), ",") + `]}`,
			`{"external_id": "CZ-6", "ACME__x": [` + strings.TrimSuffix(strings.Repeat("9e131071,", 8), ",") + `]}`, "ACME__x", "1 MiB"},
		{"a lone high surrogate", "/api/customers/upload/",
			`{"external_id": "CZ-7", "first_name": "a\ud800b"}`,
			`{"external_id": "CZ-8", "first_name": "a\ud83d\ude00b \\ud800"}`, "first_name", "surrogate"},
		{"a lone low surrogate in a nested value", "/api/products/upload/",
			`{"external_id": "P-bad", "price": 1, "versions": {"language": {"fi": {"title": "\udc00"}}}}`,
			`{"external_id": "P-ok", "price": 1, "versions": {"language": {"fi": {"title": "\ud800\udc00"}}}}`, "versions", "surrogate"},
		{"a lone surrogate in a sale's company field", "/api/sales/upload/",
			`{"sale_external_id": "SA-2", "sale_date": "2025-03-01", "sale_customer_id": "C1", "product_id": "P1", "quantity": 1, "unit_price": 1, "ACME__x": {"k": ["\uDBFF"]}}`,
			`{"sale_external_id": "SA-3", "sale_date": "2025-03-01", "sale_customer_id": "C1", "product_id": "P1", "quantity": 1, "unit_price": 1, "ACME__x": {"k": ["\uDBFF\uDFFF"]}}`, "ACME__x", "surrogate"},
		{"a datetime in year 10000 once in UTC", "/api/customers/upload/",
			`{"external_id": "CZ-9", "date_joined": "9999-12-31T23:30:00-01:00"}`,
			`{"external_id": "CZ-10", "date_joined": "9999-12-31T23:30:00+01:00"}`, "date_joined", "9999-12-31"},
		{"a datetime in year 0 once in UTC", "/api/events/upload/",
			`{"type": "BROWSE", "date": "0001-01-01T00:30:00+01:00", "customer_id": "C1", "label": "bad"}`,
			`{"type": "BROWSE", "date": "0001-01-01T00:30:00-01:00", "customer_id": "C1", "label": "ok"}`, "date", "0001-01-01"},
		{"a date in year 0", "/api/customers/upload/",
			`{"external_id": "CZ-11", "birth_date": "0000-12-31"}`,
			`{"external_id": "CZ-12", "birth_date": "0001-01-01"}`, "birth_date", "0001-01-01"},
		{"a sale date in year 10000 once in UTC", "/api/sales/upload/",
			`{"sale_external_id": "SA-4", "sale_date": "9999-12-31T23:59:59.999999-00:01", "sale_customer_id": "C1", "product_id": "P1", "quantity": 1, "unit_price": 1}`,
			`{"sale_external_id": "SA-5", "sale_date": "9999-12-31T23:59:59.999999Z", "sale_customer_id": "C1", "product_id": "P1", "quantity": 1, "unit_price": 1}`, "sale_date", "9999-12-31"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run := e.mustUpload(token, tc.path, rawBody("["+tc.bad+","+tc.good+"]"))
			a, res := e.waitRun(token, run)
			if a.Import.State != "completed" || a.Import.Accepted != 1 || a.Import.Rejected != 1 {
				t.Fatalf("run %s: %d accepted, %d rejected, want 1 and 1: %.1000s", a.Import.State, a.Import.Accepted, a.Import.Rejected, res.body)
			}
			rj := a.Import.Rejections[0]
			if rj.Index != 0 || rj.Field == nil || *rj.Field != tc.field || !strings.Contains(rj.Reason, tc.reason) {
				t.Fatalf("rejection %+v, want index 0, field %s, a reason saying %q", rj, tc.field, tc.reason)
			}
			if strings.Contains(rj.Reason, "e131072") || strings.Contains(rj.Reason, "e-16384") || strings.Contains(rj.Reason, "T23:30") {
				t.Errorf("the reason quotes the value: %s", rj.Reason)
			}
		})
	}
	// Nothing was poisoned: every projector applies the whole log.
	e.waitProjections()
	customers := byExternalID(e.retrieveExact(token, "customers"))
	for _, id := range []string{"CZ-2", "CZ-4", "CZ-6", "CZ-8", "CZ-10", "CZ-12"} {
		if customers[id] == nil {
			t.Errorf("customer %s not retrievable", id)
		}
	}
	if c := customers["CZ-10"]; c != nil && c["date_joined"] != "9999-12-31T22:30:00Z" {
		t.Errorf("date_joined %v", c["date_joined"])
	}
	if c := customers["CZ-8"]; c != nil && c["first_name"] != "a\U0001F600b \\ud800" {
		t.Errorf("first_name %q", c["first_name"])
	}
	for key, want := range map[string]int{"shops": 1, "sales": 3, "events": 2} {
		if got := len(e.retrieveExact(token, key)); got != want {
			t.Errorf("%d %s retrievable, want %d", got, key, want)
		}
	}
}

// TestUnstorableMessagesAndQueriesAreBadRequests checks that a datatarget
// message or a data query holding a value PostgreSQL cannot store is the
// client's malformed request (400 invalid_request) naming the field, not
// a 500 (before: a lone surrogate escape, or a number past the limits);
// and that a data query's update is not stored changed (a lone surrogate
// read as U+FFFD).
func TestUnstorableMessagesAndQueriesAreBadRequests(t *testing.T) {
	e, token := storableEnv(t)
	id := e.createDatatarget(token, "hostile")
	post := "/api/datatargets/" + id + "/post/"
	for _, tc := range []struct{ name, body, field string }{
		{"lone surrogate", `{"messages": [{"ok": 1}, {"a": "x\ud800"}]}`, "messages[1].a"},
		{"lone low surrogate in a bare list", `[{"a": {"b": ["\udfff"]}}]`, "messages[0].a"},
		{"number of 131073 digits", `{"messages": [{"n": 1e131072}]}`, "messages[0].n"},
		{"scale over 16383", `{"messages": [{"n": -0.5e-16383}]}`, "messages[0].n"},
		{"exponent past the bound", `{"messages": [{"n": 0e-1073741823}]}`, "messages[0].n"},
		{"numbers that print past 1 MiB", `{"messages": [{"n": [` + strings.TrimSuffix(strings.Repeat("1e131071,", 9), ",") + `]}]}`, "messages[0].n"},
		{"invalid UTF-8", "{\"messages\": [{\"a\": \"\xff\"}]}", "messages[0].a"},
		{"NUL", `{"messages": [{"a": "\u0000"}]}`, "messages[0].a"},
	} {
		t.Run("message "+tc.name, func(t *testing.T) {
			body := e.do(http.MethodPost, post, bearer(token), rawBody(tc.body)).wantError(t, http.StatusBadRequest, "invalid_request")
			if len(body.Error.Details) == 0 || body.Error.Details[0].Field != tc.field {
				t.Errorf("details %+v, want the field %s", body.Error.Details, tc.field)
			}
		})
	}
	// At the limits, and surrogate pairs, are stored and read back as sent.
	res := e.do(http.MethodPost, post, bearer(token), rawBody(`{"messages": [{"n": 1e131071, "m": 1e-16383, "z": 0e999999, "s": "\ud83d\ude00\\ud800"}]}`))
	res.wantStatus(t, http.StatusOK)
	res = e.do(http.MethodGet, "/api/datatargets/"+id+"/retrieve/", bearer(token))
	res.wantStatus(t, http.StatusOK)
	if !strings.Contains(string(res.body), `"s":"\ud83d\ude00\\ud800"`) || !strings.Contains(string(res.body), `"n":1e131071`) {
		t.Errorf("the message read back: %.200s", res.body)
	}

	// A repeated key is one member once decoded, but jsonb parses every
	// member of the text: a value hidden under a repeated key is checked
	// too, and a repeated key alone is no fault.
	res = e.do(http.MethodPost, post, bearer(token), rawBody(`{"messages": [{"n": 1e-16384, "n": 1}]}`))
	res.wantError(t, http.StatusBadRequest, "invalid_request")
	res = e.do(http.MethodPost, post, bearer(token), rawBody(`{"messages": [{"n": "\u0000", "n": 1}]}`))
	res.wantError(t, http.StatusBadRequest, "invalid_request")
	res = e.do(http.MethodPost, post, bearer(token), rawBody(`{"messages": [{"n": 2, "n": 1}]}`))
	res.wantStatus(t, http.StatusOK)

	e.importAll(token, "/api/customers/upload/", `[{"external_id": "C1", "first_name": "Ann"}]`)
	for _, tc := range []struct{ name, body, field string }{
		{"lone surrogate in match", `{"datatype": "customers", "match": {"first_name": "\ud800"}, "update": {"city": "x"}}`, "match.first_name"},
		{"number past the limit in match", `{"datatype": "customers", "match": {"ACME__x": 1e-16384}, "update": {"city": "x"}}`, "match.ACME__x"},
		{"lone surrogate in update", `{"datatype": "customers", "match": {"first_name": "Ann"}, "update": {"city": "\udc00"}}`, "update.city"},
		{"number past the limit in update", `{"datatype": "customers", "match": {"first_name": "Ann"}, "update": {"ACME__x": 1e131072}}`, "update.ACME__x"},
		{"lone surrogate in a key", `{"datatype": "customers", "match": {"first_name": "Ann"}, "update": {"ACME__\ud800": 1}}`, "update"},
		{"number past the limit under a repeated key", `{"datatype": "customers", "match": {"first_name": "Ann"}, "update": {"ACME__x": {"a": 1e-16384, "a": 1}}}`, "update.ACME__x"},
	} {
		t.Run("data query "+tc.name, func(t *testing.T) {
			body := e.do(http.MethodPost, "/api/data/query/", bearer(token), rawBody(tc.body)).wantError(t, http.StatusBadRequest, "invalid_request")
			if len(body.Error.Details) == 0 || body.Error.Details[0].Field != tc.field {
				t.Errorf("details %+v, want the field %s", body.Error.Details, tc.field)
			}
		})
	}
	// A number float64 cannot hold, but PostgreSQL can, is a value like
	// any other.
	res = e.do(http.MethodPost, "/api/data/query/", bearer(token), rawBody(`{"datatype": "customers", "match": {"ACME__x": 1e400}, "update": {"city": "x"}}`))
	res.wantStatus(t, http.StatusOK)
}
