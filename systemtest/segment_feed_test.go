package systemtest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/clientele/clientele/api"
	"github.com/clientele/clientele/app"
	"github.com/clientele/clientele/eventstore/postgres"
	"github.com/clientele/clientele/projections/datasync"
	retrievalproj "github.com/clientele/clientele/projections/retrieval"
	"github.com/clientele/clientele/projections/segments"
)

// withSegmentFeed runs the projectors a segment's feed needs, as serve
// does (its timers are fired by the tests, with the clock they choose),
// and webhook delivery; the tests poll, so the rate limit is off.
func withSegmentFeed(t *testing.T) (*env, *segments.Members) {
	e := newEnv(t, func(c *api.Config, _ *app.Application) { c.RateLimit = math.Inf(1) })
	members := segments.NewMembers(e.keys, postgres.EventLog{})
	e.runProjections(retrievalproj.NewCustomers(e.keys), retrievalproj.NewEvents(e.keys), datasync.NewDatasync(e.keys, postgres.EventLog{}), members)
	e.runImports()
	e.runDeliverer()
	return e, members
}

// feedMessage is a message of a segment's feed.
type feedMessage struct {
	UpdateID string `json:"update_id"`
	Datatype string `json:"datatype"`
	Data     struct {
		SegmentKey string         `json:"segment_key"`
		ID         string         `json:"id"`
		Member     *bool          `json:"member"`
		Customer   map[string]any `json:"customer"`
	} `json:"data"`
}

// String is the message as the tests compare it: segment, customer
// (named by its external_id in names), entry or exit, and the customer
// document's fields.
func (m feedMessage) String(names map[string]string) string {
	dir := "?"
	if m.Data.Member != nil && *m.Data.Member {
		dir = "in"
	} else if m.Data.Member != nil {
		dir = "out"
	}
	s := fmt.Sprintf("%s %s %s", m.Data.SegmentKey, names[m.Data.ID], dir)
	if m.Data.Customer != nil {
		var keys []string
		for k := range m.Data.Customer {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		s += " {" + strings.Join(keys, ",") + "}"
	}
	return s
}

func decodeFeed(t *testing.T, bodies []json.RawMessage) []feedMessage {
	t.Helper()
	out := make([]feedMessage, len(bodies))
	for i, b := range bodies {
		if err := json.Unmarshal(b, &out[i]); err != nil {
			t.Fatalf("message %s: %v", b, err)
		}
		if out[i].Datatype != "segment" || out[i].UpdateID == "" || out[i].Data.Member == nil {
			t.Errorf("message %s: want datatype segment, an update_id and member", b)
		}
	}
	return out
}

// feedOf retrieves every message of a segment datatarget.
func (e *env) feedOf(token, id string) []feedMessage {
	e.t.Helper()
	res := e.do(http.MethodGet, "/api/datatargets/"+id+"/retrieve/", bearer(token), withQuery("limit", "10000"))
	res.wantStatus(e.t, http.StatusOK)
	var p struct {
		Messages []json.RawMessage `json:"messages"`
	}
	res.decode(e.t, &p)
	return decodeFeed(e.t, p.Messages)
}

func feedStrings(ms []feedMessage, names map[string]string) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.String(names)
	}
	return out
}

// externalNames maps the company's customers' ids (neither deleted nor
// forgotten) to their external ids.
func (e *env) externalNames(token string) map[string]string {
	e.t.Helper()
	names := map[string]string{}
	for _, c := range e.retrieveAll(token, "customers").Items {
		id, _ := c["id"].(string)
		ext, _ := c["external_id"].(string)
		names[id] = ext
	}
	return names
}

// TestSegmentDatasyncFeed: a datasync datatarget of a segment takes each
// entry and exit as one message, delivered in order to a webhook: an
// entry carries the customer as retrieval shows it, limited by fields; a
// change of the customer, a deletion and a forgetting are exits without
// it; the forgotten customer's earlier entry loses its document in the
// queue; the datatype is refused without an existing segment; and a
// deleted datatarget's feed stops and goes.
func TestSegmentDatasyncFeed(t *testing.T) {
	e, _ := withSegmentFeed(t)
	admin := e.userToken(e.admin, acmeHost)
	e.createSegment(admin, map[string]any{"segment_key": "hel", "name": "Helsinki", "rule": map[string]any{"field": "city", "eq": "Helsinki"}})

	for _, bad := range []struct {
		settings map[string]any
		field    string
	}{
		{map[string]any{"datatype": "segment"}, "segment_key"},
		{map[string]any{"datatype": "segment", "segment_key": "nowhere"}, "segment_key"},
		{map[string]any{"datatype": "customers", "segment_key": "hel"}, "segment_key"},
	} {
		body := map[string]any{"datatarget_type": "datasync", "name": "bad"}
		for k, v := range bad.settings {
			body[k] = v
		}
		b := e.do(http.MethodPost, "/api/datatargets/", bearer(admin), jsonBody(body)).wantError(t, http.StatusUnprocessableEntity, "validation_error")
		if len(b.Error.Details) != 1 || b.Error.Details[0].Field != bad.field {
			t.Errorf("%v: details %+v, want one naming %s", bad.settings, b.Error.Details, bad.field)
		}
	}

	dt := e.createDatasync(admin, "crm", map[string]any{"datatype": "segment", "segment_key": "hel", "fields": []string{"email", "city"}})
	if dt["datatype"] != "segment" || dt["segment_key"] != "hel" {
		t.Fatalf("datatarget %v", dt)
	}
	id := dt["id"].(string)
	s := newSink(t)
	outlet := e.createOutlet(admin, id, s.srv.URL, false)

	e.importAll(admin, "/api/customers/upload/", `[{"external_id": "c1", "city": "Helsinki", "email": "c1@example.org", "first_name": "Ann"},
		{"external_id": "c2", "city": "Turku", "email": "c2@example.org"}]`)
	e.importAll(admin, "/api/customers/upload/", `[{"external_id": "c3", "city": "Helsinki", "email": "c3@example.org"}]`)
	e.importAll(admin, "/api/customers/upload/", `[{"external_id": "c4", "city": "Helsinki", "email": "zq-forget-me@example.org", "first_name": "Xyzzy"}]`)
	names := e.externalNames(admin)
	// The entries are delivered before the forgetting: the receiver has
	// c4's document, which the queue then loses.
	e.waitProjections()
	e.waitDelivered(outlet, 3)
	e.importAll(admin, "/api/customers/upload/", `[{"external_id": "c1", "city": "Oulu"}]`)
	e.importAll(admin, "/api/customers/upload/", `[{"external_id": "c3", "is_deleted": true}]`)
	e.importAll(admin, "/api/customers/upload/", `[{"external_id": "c4", "is_forgotten": true}]`)
	e.waitProjections()
	e.waitDelivered(outlet, 6)

	want := []string{
		"hel c1 in {city,email,id}",
		"hel c3 in {city,email,id}",
		"hel c4 in {city,email,id}",
		"hel c1 out",
		"hel c3 out",
		"hel c4 out",
	}
	got := decodeFeed(t, s.received())
	if diff := cmp.Diff(want, feedStrings(got, names)); diff != "" {
		t.Errorf("delivered (-want +got):\n%s", diff)
	}
	if len(got) > 0 && (got[0].Data.Customer["email"] != "c1@example.org" || got[0].Data.Customer["city"] != "Helsinki") {
		t.Errorf("c1's entry: %+v, want its document", got[0].Data.Customer)
	}
	// The queue: the forgotten customer's entry keeps who and what, not
	// its document; nothing of it is left in any table.
	want[2] = "hel c4 in"
	queued := e.feedOf(admin, id)
	if diff := cmp.Diff(want, feedStrings(queued, names)); diff != "" {
		t.Errorf("queued (-want +got):\n%s", diff)
	}
	if found := e.findValues("zq-forget-me@example.org", "Xyzzy"); len(found) != 0 {
		t.Errorf("after forgetting, personal data found: %v", found)
	}
	seen := map[string]bool{}
	for _, m := range queued {
		if seen[m.UpdateID] {
			t.Errorf("update_id %s twice", m.UpdateID)
		}
		seen[m.UpdateID] = true
	}
	var listed struct {
		Datatarget map[string]any `json:"datatarget"`
	}
	e.do(http.MethodGet, "/api/datatargets/"+id+"/", bearer(admin)).decode(t, &listed)
	if listed.Datatarget["last_message_number"] != 6.0 || listed.Datatarget["segment_key"] != "hel" {
		t.Errorf("datatarget %v, want segment hel and last_message_number 6", listed.Datatarget)
	}

	// A deleted datatarget's queue goes with it, and it takes no more.
	e.do(http.MethodDelete, "/api/datatargets/"+id+"/", bearer(admin)).wantStatus(t, http.StatusNoContent)
	e.importAll(admin, "/api/customers/upload/", `[{"external_id": "c5", "city": "Helsinki"}]`)
	e.waitProjections()
	var left int
	if err := e.pool.QueryRow(context.Background(), `SELECT (SELECT count(*) FROM segment_sync_messages WHERE datatarget_id = $1)
		+ (SELECT count(*) FROM segment_sync_members WHERE datatarget_id = $1)`, id).Scan(&left); err != nil || left != 0 {
		t.Errorf("after the deletion, %d rows of the datatarget's feed (%v)", left, err)
	}
}

// TestSegmentDatasyncFromStartTimeAndRebuild: a datatarget created
// from_start begins with the segment's members as entries (one created
// without it with nothing, and neither with a customer that entered and
// left before); a member whose event window passes exits in both, at the
// window's instant; a rebuild of segment_members, and the timers of the
// rebuilt tables firing again, send nothing twice (neither what was
// decided before the datatargets nor after); the next entry is one
// message more; and archiving the segment makes its members leave.
func TestSegmentDatasyncFromStartTimeAndRebuild(t *testing.T) {
	e, members := withSegmentFeed(t)
	admin := e.userToken(e.admin, acmeHost)
	e.createSegment(admin, map[string]any{"segment_key": "browsers", "name": "Browsed this week, not in Oulu",
		"rule": map[string]any{"all": []any{
			map[string]any{"event": map[string]any{"type": "BROWSE", "within_days": 7}},
			map[string]any{"field": "city", "ne": "Oulu"},
		}}})
	eventAt := time.Now().UTC().Add(-72 * time.Hour).Truncate(time.Second)
	browse := func(customer string, at time.Time) {
		t.Helper()
		if rej := e.importAll(admin, "/api/events/upload/", fmt.Sprintf(`[{"type": "BROWSE", "label": "home", "date": %q, "customer_id": %q}]`,
			at.Format(time.RFC3339), customer)); len(rej) != 0 {
			t.Fatalf("events rejected: %v", rej)
		}
	}
	e.importAll(admin, "/api/customers/upload/", `[{"external_id": "c1", "city": "Helsinki"}, {"external_id": "c2"}, {"external_id": "c3"},
		{"external_id": "c4"}]`)
	browse("c1", eventAt)
	browse("c2", eventAt.Add(time.Hour))
	// c4 enters and leaves before the datatargets exist.
	browse("c4", eventAt)
	e.importAll(admin, "/api/customers/upload/", `[{"external_id": "c4", "city": "Oulu"}]`)
	e.waitProjections()
	all := e.createDatasync(admin, "all", map[string]any{"datatype": "segment", "segment_key": "browsers", "from_start": true})["id"].(string)
	later := e.createDatasync(admin, "later", map[string]any{"datatype": "segment", "segment_key": "browsers"})["id"].(string)
	e.waitProjections()
	names := e.externalNames(admin)
	if got := e.feedOf(admin, later); len(got) != 0 {
		t.Errorf("without from_start: %v", feedStrings(got, names))
	}
	got := e.feedOf(admin, all)
	if diff := cmp.Diff([]string{"browsers c1 in", "browsers c2 in"}, stripFields(feedStrings(got, names))); diff != "" {
		t.Fatalf("from_start (-want +got):\n%s", diff)
	}
	if got[0].Data.Customer["city"] != "Helsinki" || got[0].Data.Customer["external_id"] != "c1" {
		t.Errorf("c1's entry: %v, want every field", got[0].Data.Customer)
	}

	// The windows close 7 days after the events: the timers fire as if
	// then.
	fire := func() {
		t.Helper()
		if _, err := members.FireTimers(context.Background(), e.pool, eventAt.Add(8*24*time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	fire()
	wantLater := []string{"browsers c1 out", "browsers c2 out"}
	if diff := cmp.Diff(wantLater, feedStrings(e.feedOf(admin, later), names)); diff != "" {
		t.Errorf("after the windows (-want +got):\n%s", diff)
	}
	if m := e.feedOf(admin, later); len(m) == 2 && !strings.Contains(m[0].UpdateID, eventAt.Add(7*24*time.Hour).Format("2006-01-02T15:04:05")) {
		t.Errorf("c1's exit %s: want the instant its window closed", m[0].UpdateID)
	}
	// c3 enters and leaves after the datatargets' creation.
	browse("c3", time.Now().UTC())
	e.importAll(admin, "/api/customers/upload/", `[{"external_id": "c3", "city": "Oulu"}]`)
	e.waitProjections()
	wantLater = append(wantLater, "browsers c3 in", "browsers c3 out")
	wantAll := append([]string{"browsers c1 in", "browsers c2 in"}, wantLater...)
	if diff := cmp.Diff(wantAll, stripFields(feedStrings(e.feedOf(admin, all), names))); diff != "" {
		t.Errorf("before the rebuild (-want +got):\n%s", diff)
	}

	// A rebuild decides the same entries and exits again; its timers
	// fire again in the new tables: nothing is sent twice.
	e.rebuildAll(segments.NewMembers(e.keys, postgres.EventLog{}))
	fire()
	e.waitProjections()
	if diff := cmp.Diff(wantAll, stripFields(feedStrings(e.feedOf(admin, all), names))); diff != "" {
		t.Errorf("after a rebuild (-want +got):\n%s", diff)
	}
	// The next entry is one message more in each.
	e.importAll(admin, "/api/customers/upload/", `[{"external_id": "c3", "city": "Turku"}]`)
	e.waitProjections()
	wantLater = append(wantLater, "browsers c3 in")
	if diff := cmp.Diff(wantLater, stripFields(feedStrings(e.feedOf(admin, later), names))); diff != "" {
		t.Errorf("after c3's move (-want +got):\n%s", diff)
	}
	// An archived segment has no members: each leaves. Made active
	// again, its members are decided anew, now: c1's and c2's events are
	// within the window of the real clock (the timers fired as if days
	// later), so they enter again too, in customer id order.
	e.patchSegment(admin, "browsers", map[string]any{"state": "archived"}).wantStatus(t, http.StatusOK)
	e.waitProjections()
	wantLater = append(wantLater, "browsers c3 out")
	if diff := cmp.Diff(wantLater, stripFields(feedStrings(e.feedOf(admin, later), names))); diff != "" {
		t.Errorf("after archiving (-want +got):\n%s", diff)
	}
	e.patchSegment(admin, "browsers", map[string]any{"state": "active"}).wantStatus(t, http.StatusOK)
	e.waitProjections()
	got = e.feedOf(admin, later)
	back := stripFields(feedStrings(got[min(len(wantLater), len(got)):], names))
	slices.Sort(back)
	if diff := cmp.Diff([]string{"browsers c1 in", "browsers c2 in", "browsers c3 in"}, back); diff != "" {
		t.Errorf("after reactivating (-want +got):\n%s", diff)
	}
}

// stripFields drops the customer documents' fields from the messages'
// strings.
func stripFields(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i], _, _ = strings.Cut(s, " {")
	}
	return out
}
