package systemtest_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"

	"github.com/clientele/clientele/domain/activity"
	"github.com/clientele/clientele/eventstore"
	"github.com/clientele/clientele/eventstore/postgres"
	"github.com/clientele/clientele/internal/crypto"
	"github.com/clientele/clientele/projections"
	retrievalproj "github.com/clientele/clientele/projections/retrieval"
)

// TestRetrieveEvents appends events straight to the log (the importer
// has tests of its own) and retrieves them: in id order, 9 before 10,
// paged with next_url, filtered, deleted ones left out, personal fields
// opened.
func TestRetrieveEvents(t *testing.T) {
	e := newEnv(t)
	e.runProjections(retrievalproj.NewEvents(e.keys))
	admin := e.userToken(e.admin, acmeHost)
	co := e.acme.ID
	sealed := e.sealFor(co, "c1", map[string]any{"email": "ann@example.com"})
	e.appendTo(co, activity.Stream(co),
		activityEvent(activity.TypeRecorded, activity.Recorded{ID: 9, CustomerID: "c1", Type: "BROWSE", Date: "2024-05-06T04:08:09Z",
			Fields: map[string]any{"path": "/a"}, Sealed: sealed}),
		activityEvent(activity.TypeRecorded, activity.Recorded{ID: 10, CustomerID: "c1", Type: "SENTIMENT", Date: "2024-05-07T00:00:00Z",
			Fields: map[string]any{"sentiment_value": 7}}),
		activityEvent(activity.TypeRecorded, activity.Recorded{ID: 11, CustomerID: "c1", Type: "BROWSE", Date: "2024-05-08T00:00:00Z"}),
		activityEvent(activity.TypeRecorded, activity.Recorded{ID: 12, CustomerID: "c1", Type: "BROWSE", Date: "2024-05-08T00:00:00Z"}))
	e.appendTo(co, activity.Stream(co), activityEvent(activity.TypeDeleted, activity.Deleted{ID: 12}))
	e.waitProjections()

	first := e.retrieveAll(admin, "events", withQuery("limit", "2"))
	if !strings.HasPrefix(first.NextURL, "http://"+acmeHost+"/api/data/events/?cursor=") {
		t.Fatalf("next_url %q", first.NextURL)
	}
	second := e.followPage(admin, "events", first.NextURL)
	got := append(first.Items, second.Items...)
	want := []map[string]any{
		{"id": 9.0, "type": "BROWSE", "date": "2024-05-06T04:08:09Z", "is_deleted": false, "path": "/a", "email": "ann@example.com"},
		{"id": 10.0, "type": "SENTIMENT", "date": "2024-05-07T00:00:00Z", "is_deleted": false, "sentiment_value": 7.0},
		{"id": 11.0, "type": "BROWSE", "date": "2024-05-08T00:00:00Z", "is_deleted": false},
	}
	if diff := cmp.Diff(want, got); diff != "" || second.NextURL != "" {
		t.Errorf("pages (-want +got):\n%s\nlast next_url %q", diff, second.NextURL)
	}
	// "OQ" is the cursor after 9.
	if got := e.retrieveAll(admin, "events", withQuery("type", "BROWSE"), withQuery("limit", "1"), withQuery("cursor", "OQ")).Items; len(got) != 1 || got[0]["id"] != 11.0 {
		t.Errorf("filtered after 9: %v", got)
	}
	if got := e.retrieveAll(admin, "events", withQuery("email", "ann@example.com")).Items; len(got) != 1 || got[0]["id"] != 9.0 {
		t.Errorf("by email: %v", got)
	}
	// A cursor that is not an id ("not an id", encoded) is refused.
	res := e.do(http.MethodGet, "/api/data/events/", bearer(admin), withQuery("cursor", "bm90IGFuIGlk"))
	res.wantError(t, http.StatusBadRequest, "invalid_request")
	// clientele projections rebuild events: the same answers.
	if err := projections.Rebuild(context.Background(), e.pool, e.store, postgres.EventLog{}, retrievalproj.NewEvents(e.keys), projections.KindAsync, nil); err != nil {
		t.Fatal(err)
	}
	e.waitProjections()
	if again := e.retrieveAll(admin, "events").Items; !cmp.Equal(want, again) {
		t.Errorf("after a rebuild (-want +got):\n%s", cmp.Diff(want, again))
	}
	globex := e.userToken(e.globexAd, globexHost)
	if got := e.retrieveAll(globex, "events", host(globexHost)).Items; len(got) != 0 {
		t.Errorf("another company's events: %v", got)
	}
}

// sealFor creates the customer's data key, if it has none, and seals
// personal fields with it, as the write side does.
func (e *env) sealFor(company, customerID string, personal map[string]any) []byte {
	e.t.Helper()
	ctx := context.Background()
	var sealed []byte
	err := pgx.BeginFunc(ctx, e.pool, func(tx pgx.Tx) error {
		keys, err := e.keys.Load(ctx, tx, company, []string{customerID})
		if err != nil {
			return err
		}
		if keys[customerID] == nil {
			if keys, err = e.keys.Create(ctx, tx, company, []string{customerID}); err != nil {
				return err
			}
		}
		plain, err := json.Marshal(personal)
		if err != nil {
			return err
		}
		sealed, err = crypto.Seal(keys[customerID], plain, []byte(customerID))
		return err
	})
	if err != nil {
		e.t.Fatal(err)
	}
	return sealed
}

// appendTo appends events to a stream in one commit.
func (e *env) appendTo(company, stream string, evs ...eventstore.Event) {
	e.t.Helper()
	_, err := e.store.Append(context.Background(), eventstore.Commit{
		Metadata: eventstore.Metadata{CompanyID: company, Source: "test"},
		Streams:  []eventstore.StreamAppend{{StreamID: stream, ExpectedVersion: eventstore.Any, Events: evs}},
	})
	if err != nil {
		e.t.Fatal(err)
	}
}

func activityEvent(typ string, data any) eventstore.Event {
	b, err := json.Marshal(data)
	if err != nil {
		panic(err)
	}
	return eventstore.Event{Type: typ, Data: b}
}

// followPage requests an absolute next_url of /api/data/<key>/.
func (e *env) followPage(token, key, next string) retrieval {
	e.t.Helper()
	u, err := url.Parse(next)
	if err != nil || !u.IsAbs() || u.Path != "/api/data/"+key+"/" {
		e.t.Fatalf("next_url %q is not an absolute address of %s", next, key)
	}
	opts := []option{host(u.Host)}
	for k, vs := range u.Query() {
		opts = append(opts, withQuery(k, vs[0]))
	}
	return e.retrieveAll(token, key, opts...)
}
