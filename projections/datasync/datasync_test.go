package datasync_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/clientele/clientele/domain/customer"
	"github.com/clientele/clientele/projections/internal/projectiontest"
	"github.com/clientele/clientele/readmodels"
)

// TestDatasyncMessages: every change of a customer after a datatarget's
// creation (or since the start, with from_start) is one message in log
// order, holding the customer as retrieval shows it after the change,
// restricted to the datatarget's fields.
func TestDatasyncMessages(t *testing.T) {
	e := newDatasyncEnv(t)
	e.set("c0", map[string]any{"email": "zero@example.com"})
	all := e.datatarget("all", nil, false)
	some := e.datatarget("some", []string{"email", "tags", "nope"}, false)
	e.set("c1", map[string]any{"email": "ann@example.com", "first_name": "Ann", "tags": []string{"vip"}, "can_email": true})
	e.Upsert("other", "c9", customer.Changes{Set: map[string]any{"email": "other@example.com"}})
	e.set("c0", map[string]any{"first_name": "Zed"})
	e.End(e.co.ID, "c1", customer.TypeDeleted)
	e.set("c2", map[string]any{"email": "bob@example.com"})
	e.End(e.co.ID, "c2", customer.TypeForgotten)
	fromStart := e.datatarget("from start", nil, true)
	e.set("c3", map[string]any{"email": "cy@example.com"})

	none := []any{}
	c0 := map[string]any{"id": "c0", "is_deleted": false, "is_forgotten": false, "email": "zero@example.com", "tags": none, "mailing_lists": none}
	c0b := map[string]any{"id": "c0", "is_deleted": false, "is_forgotten": false, "email": "zero@example.com", "first_name": "Zed", "tags": none, "mailing_lists": none}
	c1 := map[string]any{"id": "c1", "is_deleted": false, "is_forgotten": false, "email": "ann@example.com", "first_name": "Ann",
		"tags": []any{"vip"}, "mailing_lists": none, "can_email": true}
	c1d := map[string]any{"id": "c1", "is_deleted": true, "is_forgotten": false, "email": "ann@example.com", "first_name": "Ann",
		"tags": []any{"vip"}, "mailing_lists": none, "can_email": true}
	// c2 was forgotten by the time the projector read its upsert: the
	// message has the forgotten form, as a rebuild would give it.
	c2 := map[string]any{"id": "c2", "is_deleted": false, "is_forgotten": true}
	c3 := map[string]any{"id": "c3", "is_deleted": false, "is_forgotten": false, "email": "cy@example.com", "tags": none, "mailing_lists": none}
	pos := e.positions()
	want := func(from int, data ...map[string]any) []syncMessage {
		out := make([]syncMessage, len(data))
		for i, d := range data {
			out[i] = syncMessage{UpdateID: pos[from+i], Datatype: "customers", Data: d}
		}
		return out
	}
	if diff := cmp.Diff(want(1, c1, c0b, c1d, c2, c2, c3), e.messages(all)); diff != "" {
		t.Errorf("all fields (-want +got):\n%s", diff)
	}
	only := func(d map[string]any) map[string]any {
		out := map[string]any{}
		for _, k := range []string{"id", "is_deleted", "is_forgotten", "email", "tags"} {
			if v, ok := d[k]; ok {
				out[k] = v
			}
		}
		return out
	}
	if diff := cmp.Diff(want(1, only(c1), only(c0b), only(c1d), c2, c2, only(c3)), e.messages(some)); diff != "" {
		t.Errorf("some fields (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want(0, c0, c1, c0b, c1d, c2, c2, c3), e.messages(fromStart)); diff != "" {
		t.Errorf("from start (-want +got):\n%s", diff)
	}

	// The datatarget shows its count and settings.
	d, err := readmodels.NewDatatargets(e.Pool, e.Keys).Datatarget(context.Background(), e.co.ID, some)
	if err != nil || d.LastMessageNumber != 6 || !cmp.Equal(d.Settings.Fields, []string{"email", "tags", "nope"}) {
		t.Errorf("datatarget %+v: %v", d, err)
	}

	// A rebuild numbers and fills every message again exactly.
	before := e.tables()
	e.rebuild()
	if diff := cmp.Diff(before, e.tables()); diff != "" {
		t.Errorf("after a rebuild (-before +after):\n%s", diff)
	}
}

// TestDatasyncApplyTwice: a commit applied again (a redelivery that got
// past the checkpoint, say) adds no message.
func TestDatasyncApplyTwice(t *testing.T) {
	e := newDatasyncEnv(t)
	e.set("c0", map[string]any{"email": "zero@example.com"})
	e.datatarget("all", nil, true)
	e.set("c1", map[string]any{"email": "ann@example.com"})
	e.End(e.co.ID, "c1", customer.TypeForgotten)
	projectiontest.WaitCaughtUp(t, e.Pool, e.sync)
	before := e.tables()
	if len(before) != 4 {
		t.Fatalf("tables: %v", before)
	}
	e.applyAll()
	if diff := cmp.Diff(before, e.tables()); diff != "" {
		t.Errorf("applied twice (-once +twice):\n%s", diff)
	}
}
