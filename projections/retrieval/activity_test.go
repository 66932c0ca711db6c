package retrieval_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/clientele/clientele/domain/activity"
	"github.com/clientele/clientele/domain/customer"
	"github.com/clientele/clientele/projections/internal/projectiontest"
)

// eventRow is a row of activity_events as the tests compare it.
type eventRow struct {
	ID         int64
	CustomerID string
	Deleted    bool
	Doc        map[string]any
}

func (e *activityEnv) eventRows(company string) []eventRow {
	e.T.Helper()
	docs := e.Docs(`SELECT doc FROM activity_events WHERE company_id = $1 ORDER BY event_id`, company)
	rows, err := e.Pool.Query(context.Background(), `SELECT event_id, customer_id, is_deleted FROM activity_events WHERE company_id = $1 ORDER BY event_id`, company)
	if err != nil {
		e.T.Fatal(err)
	}
	var out []eventRow
	for i := 0; rows.Next(); i++ {
		r := eventRow{Doc: docs[i]}
		if err := rows.Scan(&r.ID, &r.CustomerID, &r.Deleted); err != nil {
			e.T.Fatal(err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		e.T.Fatal(err)
	}
	return out
}

// TestEventsProjector: an event's document is its Fields, its personal
// fields opened from the sealed part, and id, type, date and is_deleted;
// a deleted event stays, flagged; a commit applied twice changes nothing.
func TestEventsProjector(t *testing.T) {
	e := newActivityEnv(t)
	e.Upsert("co1", "c1", customer.Changes{Set: map[string]any{"email": "ann@example.com"}})
	e.Upsert("co1", "c2", customer.Changes{Set: map[string]any{"email": "bob@example.com"}})
	e.Activity("co1",
		projectiontest.RecordedEv(activity.Recorded{ID: 1, CustomerID: "c1", Type: "BROWSE", Date: "2024-05-06T04:08:09Z", ProductID: "p1",
			Fields: map[string]any{"product_id": "P-1", "utm_campaign": "spring", "tags": []string{"a", "b"}, "COMPANY__n": 12345678901234567},
			Sealed: e.Seal("co1", "c1", map[string]any{"email": "ann@example.com", "first_name": "Ann", "nope": "x"})}),
		projectiontest.RecordedEv(activity.Recorded{ID: 2, CustomerID: "c2", Type: "SENTIMENT", Date: "2024-05-07T00:00:00Z",
			Fields: map[string]any{"sentiment_value": 7, "email": "clear@example.com"}}))
	e.Activity("co1", projectiontest.RecordedEv(activity.Recorded{ID: 3, CustomerID: "c2", Type: "BROWSE", Date: "2024-05-08T00:00:00Z",
		Fields: map[string]any{"path": "/x"}}), projectiontest.DeletedEv(2))
	e.Activity("co2", projectiontest.RecordedEv(activity.Recorded{ID: 1, CustomerID: "c9", Type: "BROWSE", Date: "2024-05-08T00:00:00Z"}))

	want := []eventRow{
		{1, "c1", false, map[string]any{"id": 1.0, "type": "BROWSE", "date": "2024-05-06T04:08:09Z", "is_deleted": false,
			"product_id": "P-1", "utm_campaign": "spring", "tags": []any{"a", "b"}, "COMPANY__n": 12345678901234567.0,
			"email": "ann@example.com", "first_name": "Ann"}},
		// Personal names come from the sealed part only.
		{2, "c2", true, map[string]any{"id": 2.0, "type": "SENTIMENT", "date": "2024-05-07T00:00:00Z", "is_deleted": true, "sentiment_value": 7.0}},
		{3, "c2", false, map[string]any{"id": 3.0, "type": "BROWSE", "date": "2024-05-08T00:00:00Z", "is_deleted": false, "path": "/x"}},
	}
	if diff := cmp.Diff(want, e.eventRows("co1")); diff != "" {
		t.Errorf("rows (-want +got):\n%s", diff)
	}
	var n string
	if err := e.Pool.QueryRow(context.Background(), `SELECT doc->>'COMPANY__n' FROM activity_events WHERE company_id = 'co1' AND event_id = 1`).Scan(&n); err != nil || n != "12345678901234567" {
		t.Errorf("custom number stored as %q (%v), want it exact", n, err)
	}
	if got := e.eventRows("co2"); len(got) != 1 || got[0].Doc["id"] != 1.0 {
		t.Errorf("co2: %v", got)
	}

	// Deleting again, or deleting an id never recorded, changes nothing.
	e.Activity("co1", projectiontest.DeletedEv(2), projectiontest.DeletedEv(99))
	if diff := cmp.Diff(want, e.eventRows("co1")); diff != "" {
		t.Errorf("deleted twice (-want +got):\n%s", diff)
	}

	before := e.TableText("activity_events", "company_id, event_id")
	e.ApplyLog(e.Events)
	if diff := cmp.Diff(before, e.TableText("activity_events", "company_id, event_id")); diff != "" {
		t.Errorf("applied twice (-once +twice):\n%s", diff)
	}
	e.RebuildInline(e.Events)
	if diff := cmp.Diff(before, e.TableText("activity_events", "company_id, event_id")); diff != "" {
		t.Errorf("rebuilt (-before +after):\n%s", diff)
	}
}

// TestEventsForgotten: forgetting a customer removes the personal fields
// from its events (they stay, linked by customer_id), and nothing brings
// them back: not the events recorded since, not a rebuild, not a customer
// whose key is gone before its CustomerForgotten is applied.
func TestEventsForgotten(t *testing.T) {
	e := newActivityEnv(t)
	secrets := []string{"zq-secret@example.org", "Xyzzysecret", "Plughsecret"}
	e.Upsert("co1", "c1", customer.Changes{Set: map[string]any{"email": secrets[0]}})
	e.Upsert("co1", "c2", customer.Changes{Set: map[string]any{"email": "keep@example.org"}})
	e.Upsert("co1", "c3", customer.Changes{Set: map[string]any{"email": "cy@example.org"}})
	e.Activity("co1",
		projectiontest.RecordedEv(activity.Recorded{ID: 1, CustomerID: "c1", Type: "BROWSE", Date: "2024-05-06T04:08:09Z", Fields: map[string]any{"path": "/a"},
			Sealed: e.Seal("co1", "c1", map[string]any{"email": secrets[0], "first_name": secrets[1]})}),
		projectiontest.RecordedEv(activity.Recorded{ID: 2, CustomerID: "c2", Type: "BROWSE", Date: "2024-05-06T04:08:09Z",
			Sealed: e.Seal("co1", "c2", map[string]any{"email": "keep@example.org"})}),
		projectiontest.RecordedEv(activity.Recorded{ID: 3, CustomerID: "c1", Type: "MAIL_SUBSCRIBE", Date: "2024-05-06T04:08:09Z",
			Fields: map[string]any{"mailing_lists": []string{"weekly"}}, Sealed: e.Seal("co1", "c1", map[string]any{"last_name": secrets[2]})}),
		projectiontest.RecordedEv(activity.Recorded{ID: 4, CustomerID: "c3", Type: "BROWSE", Date: "2024-05-06T04:08:09Z",
			Sealed: e.Seal("co1", "c3", map[string]any{"first_name": "Cyrilsecret"})}))
	e.Activity("co1", projectiontest.DeletedEv(3))
	if n := e.Holding("activity_events", secrets...); n != 2 {
		t.Fatalf("%d rows hold the secrets before forgetting, want 2: the search is wrong", n)
	}

	e.End("co1", "c1", customer.TypeForgotten)
	want := []eventRow{
		{1, "c1", false, map[string]any{"id": 1.0, "type": "BROWSE", "date": "2024-05-06T04:08:09Z", "is_deleted": false, "path": "/a"}},
		{2, "c2", false, map[string]any{"id": 2.0, "type": "BROWSE", "date": "2024-05-06T04:08:09Z", "is_deleted": false, "email": "keep@example.org"}},
		{3, "c1", true, map[string]any{"id": 3.0, "type": "MAIL_SUBSCRIBE", "date": "2024-05-06T04:08:09Z", "is_deleted": true,
			"mailing_lists": []any{"weekly"}}},
		{4, "c3", false, map[string]any{"id": 4.0, "type": "BROWSE", "date": "2024-05-06T04:08:09Z", "is_deleted": false, "first_name": "Cyrilsecret"}},
	}
	if diff := cmp.Diff(want, e.eventRows("co1")); diff != "" {
		t.Errorf("after forgetting (-want +got):\n%s", diff)
	}
	if n := e.Holding("activity_events", secrets...); n != 0 {
		t.Errorf("%d rows still hold the forgotten customer's data", n)
	}

	// An event of the forgotten customer recorded later adds nothing
	// personal: its key is gone (sealed here with another customer's,
	// which cannot open it either).
	e.Activity("co1", projectiontest.RecordedEv(activity.Recorded{ID: 5, CustomerID: "c1", Type: "BROWSE", Date: "2024-05-09T00:00:00Z",
		Sealed: e.Seal("co1", "c2", map[string]any{"email": secrets[0]})}))
	want = append(want, eventRow{5, "c1", false, map[string]any{"id": 5.0, "type": "BROWSE", "date": "2024-05-09T00:00:00Z", "is_deleted": false}})
	if diff := cmp.Diff(want, e.eventRows("co1")); diff != "" {
		t.Errorf("recorded after forgetting (-want +got):\n%s", diff)
	}

	// c3's key goes without its CustomerForgotten applied (as a rebuild
	// sees every event before the forgetting): the rebuild forgets it.
	if err := e.Keys.Destroy(context.Background(), e.Pool, "co1", []string{"c3"}); err != nil {
		t.Fatal(err)
	}
	e.RebuildInline(e.Events)
	delete(want[3].Doc, "first_name")
	if diff := cmp.Diff(want, e.eventRows("co1")); diff != "" {
		t.Errorf("rebuilt (-want +got):\n%s", diff)
	}
	if n := e.Holding("activity_events", append(secrets, "Cyrilsecret")...); n != 0 {
		t.Errorf("%d rows hold forgotten data after the rebuild", n)
	}
}
