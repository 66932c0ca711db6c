package systemtest_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestDatasyncDatatargets creates datasync datatargets through the API,
// retrieves the messages the changes of customers make, and delivers them
// through an outlet whose log says after_update.
func TestDatasyncDatatargets(t *testing.T) {
	e := withDatasync(t)
	admin := e.userToken(e.admin, acmeHost)
	for _, tt := range []struct {
		body    map[string]any
		message string
	}{
		{map[string]any{"datatarget_type": "datasync", "name": "x"}, "invalid datatarget"},
		{map[string]any{"datatarget_type": "datasync", "name": "x", "datatype": "orders"}, "invalid datatarget"},
		{map[string]any{"datatarget_type": "messages", "name": "x", "datatype": "customers"}, "invalid datatarget"},
	} {
		res := e.do(http.MethodPost, "/api/datatargets/", bearer(admin), jsonBody(tt.body))
		if b := res.wantError(t, http.StatusUnprocessableEntity, "validation_error"); b.Error.Message != tt.message {
			t.Errorf("%v: %s", tt.body, res.body)
		}
	}

	e.importCustomers(e.acme, `{"external_id": "C-0", "email": "zero@example.com"}`)
	crm := e.createDatasync(admin, "CRM", map[string]any{"datatype": "customers", "fields": []string{"email", "first_name"}})
	want := map[string]any{"datatarget_type": "datasync", "datatype": "customers", "fields": []any{"email", "first_name"},
		"from_start": false, "last_message_number": 0.0}
	for k, v := range want {
		if !cmp.Equal(crm[k], v) {
			t.Errorf("datatarget %s = %v, want %v", k, crm[k], v)
		}
	}
	id := crm["id"].(string)
	all := e.createDatasync(admin, "all", map[string]any{"datatype": "customers", "from_start": true})
	if f, ok := all["fields"]; !ok || f != nil || all["from_start"] != true {
		t.Errorf("every field is fields null: %v", all)
	}
	e.do(http.MethodPost, "/api/datatargets/"+id+"/post/", bearer(admin), jsonBody(map[string]any{"messages": []any{map[string]any{}}})).
		wantError(t, http.StatusUnprocessableEntity, "validation_error")

	e.importCustomers(e.acme, `{"external_id": "C-1", "email": "ann@example.com", "first_name": "Ann", "last_name": "Anderson"}`,
		`{"external_id": "C-2", "email": "bob@example.com"}`)
	e.importCustomers(e.acme, `{"external_id": "C-1", "first_name": "Anne"}`)
	ids := map[string]string{}
	for _, c := range e.retrieve(admin).Customers {
		ids[c["external_id"].(string)] = c["id"].(string)
	}
	positions := e.customerPositions()
	page := e.syncMessages(admin, id)
	wantData := []map[string]any{
		{"email": "ann@example.com", "first_name": "Ann"},
		{"email": "bob@example.com"},
		{"email": "ann@example.com", "first_name": "Anne"},
	}
	if len(page.Messages) != 3 || page.LastMessageNumber != 3 {
		t.Fatalf("messages: %+v", page)
	}
	for i, m := range page.Messages {
		ext := map[int]string{0: "C-1", 1: "C-2", 2: "C-1"}[i]
		d := wantData[i]
		d["id"], d["is_deleted"], d["is_forgotten"] = ids[ext], false, false
		if m.UpdateID != positions[i+1] || m.Datatype != "customers" || !cmp.Equal(m.Data, d) {
			t.Errorf("message %d: %+v, want update %s, data %v", i+1, m, positions[i+1], d)
		}
	}
	if n := len(e.syncMessages(admin, all["id"].(string)).Messages); n != 4 {
		t.Errorf("from start: %d messages, want 4", n)
	}
	var got datatargetAnswer
	e.do(http.MethodGet, "/api/datatargets/"+id+"/", bearer(admin)).decode(t, &got)
	if got.Datatarget.LastMessageNumber != 3 {
		t.Errorf("last_message_number %d", got.Datatarget.LastMessageNumber)
	}

	// One message per request: each entry's after_update is the update
	// before it, and no entry shows first_message_number.
	rcv := newSink(t)
	outlet := e.createOutlet(admin, id, rcv.srv.URL, false)
	e.runDeliverer()
	e.waitDelivered(outlet, 3)
	for i, b := range rcv.received() {
		var m struct {
			UpdateID string `json:"update_id"`
		}
		if err := json.Unmarshal(b, &m); err != nil || m.UpdateID != positions[i+1] {
			t.Errorf("delivery %d: %s", i+1, b)
		}
	}
	res := e.do(http.MethodGet, "/api/datatargets/"+id+"/outlets/"+outlet+"/log/", bearer(admin), withQuery("order", "ascending"))
	res.wantStatus(t, http.StatusOK)
	var log struct {
		Entries []map[string]any `json:"entries"`
	}
	res.decode(t, &log)
	if len(log.Entries) != 3 {
		t.Fatalf("log: %s", res.body)
	}
	for i, entry := range log.Entries {
		after, ok := entry["after_update"]
		if _, first := entry["first_message_number"]; first || (i == 0) == ok || (i > 0 && after != positions[i]) {
			t.Errorf("entry %d: %v (want after_update %s)", i+1, entry, positions[i])
		}
	}
}
