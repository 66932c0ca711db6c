package datasync_test

import (
	"github.com/clientele/clientele/internal/pg/pgtest"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/clientele/clientele/domain/activity"
	"github.com/clientele/clientele/domain/customer"
	"github.com/clientele/clientele/domain/datatarget"
	"github.com/clientele/clientele/domain/sale"
	"github.com/clientele/clientele/projections/internal/projectiontest"
	"github.com/clientele/clientele/projections/retrieval"
)

// TestDatasyncEvents: every EventRecorded and EventDeleted after a
// datatarget's creation (or since the start) is one message in log
// order, holding the event as retrieval shows it after the change (a
// deleted one with "is_deleted": true, whether its recording is in the
// same call or found in the log), restricted to the datatarget's fields
// plus id and is_deleted; a rebuild gives the same bytes.
func TestDatasyncEvents(t *testing.T) {
	e := newDatasyncEnv(t)
	co := e.co.ID
	e.set("c1", map[string]any{"email": "ann@example.com"})
	e.set("c2", map[string]any{"email": "bob@example.com"})
	e.Activity(co, projectiontest.RecordedEv(activity.Recorded{ID: 1, CustomerID: "c1", Type: "BROWSE", Date: "2024-05-06T04:08:09Z",
		Fields: map[string]any{"path": "/a"}, Sealed: e.Seal(co, "c1", map[string]any{"email": "ann@example.com", "first_name": "Ann"})}))
	all := e.datasyncOf(datatarget.Events, "all", nil, false)
	some := e.datasyncOf(datatarget.Events, "some", []string{"type", "email"}, false)
	e.Activity(co, projectiontest.RecordedEv(activity.Recorded{ID: 2, CustomerID: "c2", Type: "SENTIMENT", Date: "2024-05-07T00:00:00Z",
		Fields: map[string]any{"sentiment_value": 7}}), projectiontest.DeletedEv(2))
	e.Activity(co, projectiontest.DeletedEv(1))
	e.Activity("other", projectiontest.RecordedEv(activity.Recorded{ID: 1, CustomerID: "c9", Type: "BROWSE", Date: "2024-05-06T04:08:09Z"}))
	fromStart := e.datasyncOf(datatarget.Events, "from start", nil, true)
	e.Activity(co, projectiontest.RecordedEv(activity.Recorded{ID: 3, CustomerID: "c1", Type: "BROWSE", Date: "2024-05-08T00:00:00Z"}))

	ev1 := map[string]any{"id": 1.0, "type": "BROWSE", "date": "2024-05-06T04:08:09Z", "is_deleted": false, "path": "/a",
		"email": "ann@example.com", "first_name": "Ann"}
	ev1d := with(ev1, "is_deleted", true)
	ev2 := map[string]any{"id": 2.0, "type": "SENTIMENT", "date": "2024-05-07T00:00:00Z", "is_deleted": false, "sentiment_value": 7.0}
	ev2d := with(ev2, "is_deleted", true)
	ev3 := map[string]any{"id": 3.0, "type": "BROWSE", "date": "2024-05-08T00:00:00Z", "is_deleted": false}
	pos := e.positionsOfTypes(activity.TypeRecorded, activity.TypeDeleted)
	want := func(from int, data ...map[string]any) []syncMessage {
		out := make([]syncMessage, len(data))
		for i, d := range data {
			out[i] = syncMessage{UpdateID: pos[from+i], Datatype: "events", Data: d}
		}
		return out
	}
	if diff := cmp.Diff(want(1, ev2, ev2d, ev1d, ev3), e.messages(all)); diff != "" {
		t.Errorf("all fields (-want +got):\n%s", diff)
	}
	only := func(d map[string]any) map[string]any { return pick(d, "id", "is_deleted", "type", "email") }
	if diff := cmp.Diff(want(1, only(ev2), only(ev2d), only(ev1d), only(ev3)), e.messages(some)); diff != "" {
		t.Errorf("some fields (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want(0, ev1, ev2, ev2d, ev1d, ev3), e.messages(fromStart)); diff != "" {
		t.Errorf("from start (-want +got):\n%s", diff)
	}

	// The last message of each event is its read-model document.
	docs := e.readModel(retrieval.NewEvents(e.Keys), `SELECT doc::text FROM activity_events WHERE company_id = $1 ORDER BY event_id`)
	if diff := cmp.Diff([]map[string]any{ev1d, ev2d, ev3}, docs); diff != "" {
		t.Errorf("read model (-messages +read model):\n%s", diff)
	}

	before := e.tables()
	e.rebuild()
	if diff := cmp.Diff(before, e.tables()); diff != "" {
		t.Errorf("after a rebuild (-before +after):\n%s", diff)
	}
	e.applyAll()
	if diff := cmp.Diff(before, e.tables()); diff != "" {
		t.Errorf("applied twice (-once +twice):\n%s", diff)
	}
}

// TestDatasyncEventsSalesForget: forgetting a customer removes its
// personal fields from the queued messages of its events and sales (the
// messages stay, as the entities do), in every events and sales
// datatarget, exactly as a rebuild with the key gone writes them; other
// customers' messages keep theirs.
func TestDatasyncEventsSalesForget(t *testing.T) {
	e := newDatasyncEnv(t)
	co := e.co.ID
	events := e.datasyncOf(datatarget.Events, "events", nil, false)
	someEvents := e.datasyncOf(datatarget.Events, "some", []string{"first_name", "path"}, false)
	sales := e.datasyncOf(datatarget.Sales, "sales", nil, false)
	secrets := []string{"zq-secret@example.org", "Xyzzysecret", "Plughsecret"}
	e.set("p1", map[string]any{"email": secrets[0]})
	e.set("k1", map[string]any{"email": "keep@example.org"})
	e.Activity(co,
		projectiontest.RecordedEv(activity.Recorded{ID: 1, CustomerID: "p1", Type: "BROWSE", Date: "2024-05-06T04:08:09Z", Fields: map[string]any{"path": "/a"},
			Sealed: e.Seal(co, "p1", map[string]any{"email": secrets[0], "first_name": secrets[1]})}),
		projectiontest.RecordedEv(activity.Recorded{ID: 2, CustomerID: "k1", Type: "BROWSE", Date: "2024-05-06T04:08:09Z",
			Sealed: e.Seal(co, "k1", map[string]any{"email": "keep@example.org"})}))
	e.Activity(co, projectiontest.DeletedEv(1))
	e.SaleUpsert(co, sale.Upserted{SaleID: "s1", ExternalID: "S-1", CustomerID: "p1", Created: true,
		Set: map[string]any{"sale_total": 10}, Sealed: e.Seal(co, "p1", map[string]any{"sale_last_name": secrets[2]})})
	e.messages(events)
	if n := e.count(secrets...); n != 5 {
		t.Fatalf("%d messages hold the secrets before forgetting, want 5: the search is wrong", n)
	}

	e.End(co, "p1", customer.TypeForgotten)
	late := e.datasyncOf(datatarget.Events, "late", nil, true)
	ev1 := map[string]any{"id": 1.0, "type": "BROWSE", "date": "2024-05-06T04:08:09Z", "is_deleted": false, "path": "/a"}
	ev2 := map[string]any{"id": 2.0, "type": "BROWSE", "date": "2024-05-06T04:08:09Z", "is_deleted": false, "email": "keep@example.org"}
	wantEvents := []map[string]any{ev1, ev2, with(ev1, "is_deleted", true)}
	for _, id := range []string{events, late} {
		if diff := cmp.Diff(wantEvents, dataOf(e.messages(id))); diff != "" {
			t.Errorf("events datatarget %s after forgetting (-want +got):\n%s", id, diff)
		}
	}
	if diff := cmp.Diff([]map[string]any{pick(ev1, "id", "is_deleted", "path"), pick(ev2, "id", "is_deleted"),
		{"id": 1.0, "is_deleted": true, "path": "/a"}}, dataOf(e.messages(someEvents))); diff != "" {
		t.Errorf("restricted events datatarget after forgetting (-want +got):\n%s", diff)
	}
	wantSale := map[string]any{"sale_external_id": "S-1", "sale_total": 10.0, "sale_rows": []any{}, "sale_is_deleted": false}
	if diff := cmp.Diff([]map[string]any{wantSale}, dataOf(e.messages(sales))); diff != "" {
		t.Errorf("sales datatarget after forgetting (-want +got):\n%s", diff)
	}
	if n := e.count(secrets...); n != 0 {
		t.Errorf("%d messages still hold the forgotten customer's data", n)
	}

	after := e.tables()
	e.rebuild()
	if diff := cmp.Diff(after, e.tables()); diff != "" {
		t.Errorf("rebuilt after forgetting (-before +after):\n%s", diff)
	}
	if n := e.count(secrets...); n != 0 {
		t.Errorf("%d messages hold the forgotten customer's data after the rebuild", n)
	}
}

// positionsOfTypes are the global positions of the company's events of
// the types, as update ids, in log order.
func (e *datasyncEnv) positionsOfTypes(types ...string) []string {
	e.T.Helper()
	return pgtest.EventPositions(e.T, e.Pool, "company_id = $1 AND event_type = ANY($2)", e.co.ID, types)
}

// with returns a copy of d with k set to v.
func with(d map[string]any, k string, v any) map[string]any {
	out := make(map[string]any, len(d)+1)
	for f, x := range d {
		out[f] = x
	}
	out[k] = v
	return out
}

// pick returns the fields of d among keys.
func pick(d map[string]any, keys ...string) map[string]any {
	out := map[string]any{}
	for _, k := range keys {
		if v, ok := d[k]; ok {
			out[k] = v
		}
	}
	return out
}

func dataOf(ms []syncMessage) []map[string]any {
	out := make([]map[string]any, len(ms))
	for i, m := range ms {
		out[i] = m.Data
	}
	return out
}
