package systemtest_test

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/clientele/clientele/eventstore/postgres"
	"github.com/clientele/clientele/projections/datasync"
	retrievalproj "github.com/clientele/clientele/projections/retrieval"
)

// TestDatasyncForgetLeavesNoTrace is TestForgetLeavesNoTrace with datasync
// datatargets (every field, some fields, and one created after the
// forgetting from the start of the log) and an outlet that delivered the
// person's messages before the forgetting: afterwards, and after every
// projection is rebuilt, no table holds any of the person's values, and
// every message about the person has the forgotten form.
func TestDatasyncForgetLeavesNoTrace(t *testing.T) {
	e := withDatasync(t)
	e.runImports()
	admin := e.userToken(e.admin, acmeHost)
	upload := func(body string, opts ...option) {
		t.Helper()
		run := e.mustUpload(admin, "/api/customers/upload/", append([]option{rawBody(body)}, opts...)...)
		if a, res := e.waitRun(admin, run); a.Import.State != "completed" || a.Import.Rejected != 0 {
			t.Fatalf("run: %s", res.body)
		}
		e.waitProjections()
	}
	full := e.createDatasync(admin, "full", map[string]any{"datatype": "customers"})["id"].(string)
	some := e.createDatasync(admin, "some", map[string]any{"datatype": "customers", "fields": []string{"email", "tags"}})["id"].(string)
	rcv := newSink(t)
	outlet := e.createOutlet(admin, full, rcv.srv.URL, true)
	e.runDeliverer()

	personal := []string{"zq-forget-me@example.org", "Xyzzyforgetme", "+358409876543", "Forgetmestreet 12", "Plughforget", "F-XYZZY-1"}
	kept := "keep-me@example.org"
	upload(`[{"external_id": "F-XYZZY-1", "email": "zq-forget-me@example.org", "first_name": "Xyzzyforgetme",
		"phone_number": "+358409876543", "street_address": "Forgetmestreet 12", "tags": ["Plughforget"]},
		{"email": "keep-me@example.org"}]`)
	upload("email;last_name;tags.add.0\nzq-forget-me@example.org;Plughforget;vip\n", withHeader("Content-Type", "text/csv"))
	e.waitDelivered(outlet, 3)
	found := e.findValues(personal...)
	// The outlet log holds the attempts' raw texts sealed (migration
	// 00032): the search finds them only in the read models.
	where := []string{"public.customers", "public.datasync_messages"}
	if len(found) != len(personal) || !cmp.Equal(sorted(found["Forgetmestreet 12"]), where) {
		t.Fatalf("before forgetting the search finds %v: it would miss data", found)
	}
	id := e.retrieve(admin, withQuery("external_id", "F-XYZZY-1")).Customers[0]["id"].(string)

	upload(`[{"external_id": "F-XYZZY-1", "is_forgotten": true}]`)
	late := e.createDatasync(admin, "late", map[string]any{"datatype": "customers", "from_start": true})["id"].(string)
	e.waitProjections()
	if found := e.findValues(personal...); len(found) != 0 {
		t.Errorf("after forgetting, personal data found: %v", found)
	}
	e.rebuildAll(retrievalproj.NewCustomers(e.keys), datasync.NewDatasync(e.keys, postgres.EventLog{}))
	if found := e.findValues(personal...); len(found) != 0 {
		t.Errorf("after the rebuilds, personal data found: %v", found)
	}
	if found := e.findValues(kept); !cmp.Equal(sorted(found[kept]), where) {
		t.Errorf("the other customer's data is in %v: the search or the rebuild is wrong", found[kept])
	}
	for _, dt := range []string{full, some, late} {
		page := e.syncMessages(admin, dt)
		var forgotten int
		for _, m := range page.Messages {
			if m.Data["id"] != id {
				continue
			}
			forgotten++
			if len(m.Data) != 3 || m.Data["is_forgotten"] != true || m.Data["is_deleted"] != false {
				t.Errorf("datatarget %s: message about the forgotten customer: %v", dt, m.Data)
			}
		}
		if forgotten != 3 {
			t.Errorf("datatarget %s: %d messages about the forgotten customer, want 3", dt, forgotten)
		}
	}
	e.waitDelivered(outlet, 4)
	if n := len(rcv.received()); n < 1 {
		t.Error("nothing delivered")
	}
}

func sorted(s []string) []string { return slices.Sorted(slices.Values(s)) }
