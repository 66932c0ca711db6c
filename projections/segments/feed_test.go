package segments_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/clientele/clientele/domain/customer"
	"github.com/clientele/clientele/domain/datatarget"
	"github.com/clientele/clientele/eventstore"
	"github.com/clientele/clientele/eventstore/postgres"
	"github.com/clientele/clientele/projections"
	"github.com/clientele/clientele/projections/internal/projectiontest"
)

// createSegmentFeed appends the creation of a datasync datatarget of the
// segment, as the command does.
func (e *membersEnv) createSegmentFeed(company, id, key string, fields []string) {
	e.T.Helper()
	d := datatarget.Datatarget{ID: id, Type: datatarget.Datasync, Name: id, Enabled: true, CreatedAt: time.Now().UTC(),
		Settings: datatarget.Settings{Datatype: datatarget.Segment, SegmentKey: key, Fields: fields}}
	data, err := json.Marshal(datatarget.NewCreated(d))
	if err != nil {
		e.T.Fatal(err)
	}
	projectiontest.MustAppend(e.T, e.Store, eventstore.Commit{
		Metadata: eventstore.Metadata{CompanyID: company, Source: "test"},
		Streams: []eventstore.StreamAppend{{StreamID: datatarget.Stream(company, id), ExpectedVersion: eventstore.NoStream,
			Events: []eventstore.Event{{Type: datatarget.CreatedType, Data: data}}}},
	})
}

// TestSegmentFeedAppliedAgain: the projector writes one message per entry
// and exit to the segment's datatarget, an entry with the customer's
// document limited by fields and an exit without, from its creation on;
// the whole log applied once more, and a rebuild, write none again.
func TestSegmentFeedAppliedAgain(t *testing.T) {
	e := newMembersEnv(t)
	co := "acme"
	e.createSegment(co, "hel", `{"field":"city","eq":"Helsinki"}`)
	e.Upsert(co, "c0", customer.Changes{Set: map[string]any{"external_id": "c0", "city": "Helsinki"}})
	// c3 enters and leaves before the datatarget: nothing of it is for it.
	e.Upsert(co, "c3", customer.Changes{Set: map[string]any{"external_id": "c3", "city": "Helsinki"}})
	e.Upsert(co, "c3", customer.Changes{Set: map[string]any{"city": "Oulu"}})
	e.createSegmentFeed(co, "dt1", "hel", []string{"city"})
	e.Upsert(co, "c1", customer.Changes{Set: map[string]any{"external_id": "c1", "city": "Helsinki", "email": "c1@example.org"}})
	e.Upsert(co, "c2", customer.Changes{Set: map[string]any{"external_id": "c2", "city": "Helsinki"}})
	e.Upsert(co, "c1", customer.Changes{Set: map[string]any{"city": "Turku"}})
	e.caughtUp()
	messages := func() []string {
		t.Helper()
		rows, err := e.Pool.Query(context.Background(), `SELECT body::jsonb->'data' FROM segment_sync_messages
			WHERE datatarget_id = 'dt1' ORDER BY number`)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for rows.Next() {
			var data map[string]any
			if err := rows.Scan(&data); err != nil {
				t.Fatal(err)
			}
			b, _ := json.Marshal(data)
			out = append(out, string(b))
		}
		return out
	}
	want := []string{
		`{"customer":{"city":"Helsinki","id":"c1"},"id":"c1","member":true,"segment_key":"hel"}`,
		`{"customer":{"city":"Helsinki","id":"c2"},"id":"c2","member":true,"segment_key":"hel"}`,
		`{"id":"c1","member":false,"segment_key":"hel"}`,
	}
	if diff := cmp.Diff(want, messages()); diff != "" {
		t.Fatalf("messages (-want +got):\n%s", diff)
	}
	queue := e.TableText("segment_sync_messages", "datatarget_id, number")
	e.ApplyLog(e.members)
	if diff := cmp.Diff(queue, e.TableText("segment_sync_messages", "datatarget_id, number")); diff != "" {
		t.Errorf("the log applied again (-before +after):\n%s", diff)
	}
	if err := projections.Rebuild(context.Background(), e.Pool, e.Store, postgres.EventLog{}, e.members, projections.KindAsync, nil); err != nil {
		t.Fatal(err)
	}
	e.caughtUp()
	if diff := cmp.Diff(queue, e.TableText("segment_sync_messages", "datatarget_id, number")); diff != "" {
		t.Errorf("rebuilt (-before +after):\n%s", diff)
	}
}
