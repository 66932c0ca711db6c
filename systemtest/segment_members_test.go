package systemtest_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/clientele/clientele/eventstore/postgres"
	retrievalproj "github.com/clientele/clientele/projections/retrieval"
	"github.com/clientele/clientele/projections/segments"
)

// runSegmentTimers fires the segment timers every interval until the
// test ends, as the service does.
func (e *env) runSegmentTimers(m *segments.Members, every time.Duration) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		m.RunTimers(ctx, e.pool, every, time.Now, func(err error) { e.t.Errorf("segment timers: %v", err) })
	}()
	e.t.Cleanup(func() { cancel(); <-done })
}

// historyRow is an entry or exit as segment_history holds it.
type historyRow struct {
	Segment, Customer string
	Member            bool
	At                time.Time
	Cause             string
}

// segmentState returns the members (segment/external id/entered_at) and
// the history of the company's segments, customers named by external_id.
func (e *env) segmentState(company string) (members []string, history []historyRow) {
	e.t.Helper()
	ctx := context.Background()
	rows, err := e.pool.Query(ctx, `SELECT m.segment_key, coalesce(c.doc->>'external_id', m.customer_id), m.entered_at
		FROM segment_members m LEFT JOIN segment_customers c USING (company_id, customer_id)
		WHERE m.company_id = $1 ORDER BY 1, 2`, company)
	if err != nil {
		e.t.Fatal(err)
	}
	for rows.Next() {
		var s, c string
		var at time.Time
		if err := rows.Scan(&s, &c, &at); err != nil {
			e.t.Fatal(err)
		}
		members = append(members, fmt.Sprintf("%s/%s/%s", s, c, at.UTC().Format(time.RFC3339Nano)))
	}
	rows, err = e.pool.Query(ctx, `SELECT h.segment_key, h.customer_id, h.member, h.at, h.cause FROM segment_history h
		WHERE h.company_id = $1 ORDER BY h.seq`, company)
	if err != nil {
		e.t.Fatal(err)
	}
	for rows.Next() {
		var h historyRow
		if err := rows.Scan(&h.Segment, &h.Customer, &h.Member, &h.At, &h.Cause); err != nil {
			e.t.Fatal(err)
		}
		h.At = h.At.UTC()
		history = append(history, h)
	}
	return members, history
}

// customerIDOf is the internal id of the customer with external_id ext.
func (e *env) customerIDOf(company, ext string) string {
	e.t.Helper()
	var id string
	if err := e.pool.QueryRow(context.Background(), `SELECT customer_id FROM segment_customers WHERE company_id = $1 AND doc->>'external_id' = $2`,
		company, ext).Scan(&id); err != nil {
		e.t.Fatalf("customer %s: %v", ext, err)
	}
	return id
}

// waitFor polls cond until it holds, failing after limit.
func (e *env) waitFor(limit time.Duration, what string, cond func() bool) {
	e.t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			e.t.Fatalf("waited %s for %s", limit, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestSegmentMembersFollowTheLogAndTime: members enter when their data
// makes the rule true (at the commit), leave when a window passes (at
// that exact instant, with no new data, seen within the timer's
// interval), a new segment is backfilled over the company, a change of a
// customer moves it, and a rebuild of the projection gives the same
// members and history.
func TestSegmentMembersFollowTheLogAndTime(t *testing.T) {
	e := newEnv(t)
	members := segments.NewMembers(e.keys, postgres.EventLog{})
	e.runProjections(retrievalproj.NewCustomers(e.keys), retrievalproj.NewEvents(e.keys), members)
	e.runImports()
	e.runSegmentTimers(members, 200*time.Millisecond)
	admin := e.userToken(e.admin, acmeHost)
	co := e.acme.ID

	e.createSegment(admin, map[string]any{"segment_key": "hot", "name": "Browsed in Helsinki today", "rule": map[string]any{"all": []any{
		map[string]any{"field": "city", "eq": "Helsinki"},
		map[string]any{"event": map[string]any{"type": "BROWSE", "within_days": 1}},
	}}})
	e.importAll(admin, "/api/customers/upload/", `[{"external_id": "c1", "city": "Helsinki"}, {"external_id": "c2", "city": "Turku"},
		{"external_id": "c3", "city": "Helsinki"}]`)
	// c1's event is dated so that its one-day window closes a few seconds
	// from now.
	eventAt := time.Now().UTC().Add(-24*time.Hour + 4*time.Second).Truncate(time.Second)
	rej := e.importAll(admin, "/api/events/upload/", fmt.Sprintf(`[{"type": "BROWSE", "label": "home", "date": %q, "customer_id": "c1"},
		{"type": "BROWSE", "label": "home", "date": %q, "customer_id": "c2"}]`, eventAt.Format(time.RFC3339), eventAt.Format(time.RFC3339)))
	if len(rej) != 0 {
		t.Fatalf("events rejected: %v", rej)
	}
	c1, c3 := e.customerIDOf(co, "c1"), e.customerIDOf(co, "c3")

	got, history := e.segmentState(co)
	if len(got) != 1 || len(history) != 1 || history[0].Customer != c1 || !history[0].Member || history[0].Cause != segments.CauseEvent {
		t.Fatalf("after the event: members %v, history %+v", got, history)
	}
	entered := history[0].At
	if entered.Before(eventAt) || entered.After(time.Now()) {
		t.Errorf("entered at %s: not the commit's time", entered)
	}

	// A segment created now is backfilled: c1 and c3 live in Helsinki.
	e.createSegment(admin, map[string]any{"segment_key": "hel", "name": "Helsinki", "rule": map[string]any{"field": "city", "eq": "Helsinki"}})
	e.waitProjections()
	// (c1 may have left "hot" already: its window is a few seconds.)
	if got, _ := e.segmentState(co); len(got) < 2 || got[0][:7] != "hel/c1/" || got[1][:7] != "hel/c3/" {
		t.Fatalf("after the backfill: %v", got)
	}
	// The window passes: c1 leaves "hot" at the instant it closed.
	e.waitFor(30*time.Second, "c1 to leave hot", func() bool {
		m, _ := e.segmentState(co)
		return len(m) == 2
	})
	// Then c3 moves: it leaves, by its own change. (After the window, not
	// before it: the window is a few seconds, and on a loaded machine the
	// backfill alone took them.)
	e.importAll(admin, "/api/customers/upload/", `[{"external_id": "c3", "city": "Oulu"}]`)
	e.waitProjections()
	got, history = e.segmentState(co)
	if len(history) != 5 {
		t.Fatalf("history %+v: want 5 rows", history)
	}
	want := []historyRow{
		{"hot", c1, true, entered, segments.CauseEvent},
		{"hel", c1, true, history[1].At, segments.CauseRule},
		{"hel", c3, true, history[1].At, segments.CauseRule},
		{"hot", c1, false, eventAt.Add(24 * time.Hour), segments.CauseTime},
		{"hel", c3, false, history[4].At, segments.CauseCustomer},
	}
	if diff := cmp.Diff(want, history); diff != "" {
		t.Errorf("history (-want +got):\n%s", diff)
	}
	if len(got) != 1 || got[0][:7] != "hel/c1/" {
		t.Errorf("members %v", got)
	}

	// The read routes answer from the same tables.
	if got := e.retrieveAll(admin, "customers", withQuery("segment", "hel")).Items; len(got) != 1 || got[0]["external_id"] != "c1" {
		t.Errorf("?segment=hel: %v", got)
	}
	res := e.do(http.MethodGet, "/api/segments/hel/customers/", bearer(admin), withQuery("limit", "1"))
	res.wantStatus(t, http.StatusOK)
	var page struct {
		Customers []map[string]any `json:"customers"`
		NextURL   string           `json:"next_url"`
	}
	res.decode(t, &page)
	if len(page.Customers) != 1 || page.Customers[0]["external_id"] != "c1" || page.NextURL != "" {
		t.Errorf("members of hel: %+v", page)
	}
	if s := segmentOf(t, e.do(http.MethodGet, "/api/segments/hel/", bearer(admin))); s.Size != 1 || s.ComputedAt != history[4].At.Format(time.RFC3339Nano) {
		t.Errorf("size of hel %d, computed_at %s (c3's move: the last change)", s.Size, s.ComputedAt)
	}
	globex := e.userToken(e.globexAd, globexHost)
	e.do(http.MethodGet, "/api/customers/"+c1+"/segments/", bearer(globex), host(globexHost)).wantError(t, http.StatusNotFound, "not_found")
	res = e.do(http.MethodGet, "/api/customers/"+c1+"/segments/", bearer(admin))
	var mine struct {
		Segments []struct {
			Key       string    `json:"segment_key"`
			EnteredAt time.Time `json:"entered_at"`
		} `json:"segments"`
	}
	res.wantStatus(t, http.StatusOK)
	res.decode(t, &mine)
	if len(mine.Segments) != 1 || mine.Segments[0].Key != "hel" || !mine.Segments[0].EnteredAt.Equal(history[1].At) {
		t.Errorf("c1's segments: %+v", mine)
	}
	res = e.do(http.MethodGet, "/api/segments/hot/history/", bearer(admin), withQuery("customer", c1),
		withQuery("from", eventAt.Format(time.RFC3339)))
	var hist struct {
		Entries []struct {
			Member bool      `json:"member"`
			At     time.Time `json:"at"`
			Cause  string    `json:"cause"`
		} `json:"entries"`
	}
	res.wantStatus(t, http.StatusOK)
	res.decode(t, &hist)
	if len(hist.Entries) != 2 || !hist.Entries[1].At.Equal(eventAt.Add(24*time.Hour)) || hist.Entries[1].Cause != "time" {
		t.Errorf("history of c1 in hot: %+v", hist)
	}
	res = e.do(http.MethodPost, "/api/segments/preview/", bearer(admin), jsonBody(map[string]any{"rule": map[string]any{"any": []any{
		map[string]any{"segment": "hel"}, map[string]any{"field": "city", "eq": "Turku"}}}}))
	var preview struct {
		Size   int              `json:"size"`
		Sample []map[string]any `json:"sample"`
	}
	res.wantStatus(t, http.StatusOK)
	res.decode(t, &preview)
	if preview.Size != 2 || len(preview.Sample) != 2 || preview.Sample[0]["external_id"] != "c1" || preview.Sample[1]["external_id"] != "c2" {
		t.Errorf("preview: %+v", preview)
	}
	b := e.do(http.MethodPost, "/api/segments/preview/", bearer(admin), jsonBody(map[string]any{"rule": map[string]any{"not": map[string]any{"segment": "zz"}}})).
		wantError(t, http.StatusUnprocessableEntity, "validation_error")
	if len(b.Error.Details) != 1 || b.Error.Details[0].Field != "rule.not.segment" {
		t.Errorf("preview of an unknown segment: %+v", b.Error.Details)
	}
	e.do(http.MethodGet, "/api/segments/nope/customers/", bearer(admin)).wantError(t, http.StatusNotFound, "not_found")
	e.do(http.MethodGet, "/api/segments/hot/history/", bearer(admin), withQuery("from", "yesterday")).wantError(t, http.StatusBadRequest, "invalid_request")

	// clientele projections rebuild segment_members: the same members and
	// history.
	e.rebuildAll(members)
	e.waitFor(10*time.Second, "the rebuilt history", func() bool {
		_, h := e.segmentState(co)
		return len(h) == len(history)
	})
	againMembers, againHistory := e.segmentState(co)
	if diff := cmp.Diff(got, againMembers); diff != "" {
		t.Errorf("members after a rebuild (-before +after):\n%s", diff)
	}
	if diff := cmp.Diff(history, againHistory); diff != "" {
		t.Errorf("history after a rebuild (-before +after):\n%s", diff)
	}
}

// TestSegmentMembersLeaveWhenDeletedOrForgotten: a deleted and a
// forgotten member leave every segment at once, at the commit, with that
// cause, and the forgotten one's document is gone from the projection.
func TestSegmentMembersLeaveWhenDeletedOrForgotten(t *testing.T) {
	e := newEnv(t)
	e.runProjections(retrievalproj.NewCustomers(e.keys), segments.NewMembers(e.keys, postgres.EventLog{}))
	e.runImports()
	admin := e.userToken(e.admin, acmeHost)
	co := e.acme.ID
	e.createSegment(admin, map[string]any{"segment_key": "hel", "name": "Helsinki", "rule": map[string]any{"field": "city", "eq": "Helsinki"}})
	e.createSegment(admin, map[string]any{"segment_key": "mail", "name": "Mailable", "rule": map[string]any{"field": "can_email", "eq": true}})
	e.importAll(admin, "/api/customers/upload/", `[{"external_id": "D", "city": "Helsinki", "email": "d@x.test", "can_email": true},
		{"external_id": "F", "city": "Helsinki", "email": "f@x.test", "can_email": true}, {"external_id": "K", "city": "Helsinki"}]`)
	d, f := e.customerIDOf(co, "D"), e.customerIDOf(co, "F")
	if got, _ := e.segmentState(co); len(got) != 5 {
		t.Fatalf("members %v", got)
	}
	e.importAll(admin, "/api/customers/upload/", `[{"external_id": "D", "is_deleted": true}, {"external_id": "F", "is_forgotten": true}]`)
	got, history := e.segmentState(co)
	if len(got) != 1 || got[0][:6] != "hel/K/" {
		t.Errorf("members after: %v", got)
	}
	exits := map[string]string{}
	var at time.Time
	for _, h := range history[5:] {
		if h.Member {
			t.Errorf("an entry: %+v", h)
		}
		exits[h.Segment+"/"+h.Customer] = h.Cause
		if !at.IsZero() && !h.At.Equal(at) {
			t.Errorf("exits at %s and %s: not one commit", at, h.At)
		}
		at = h.At
	}
	want := map[string]string{"hel/" + d: "deleted", "mail/" + d: "deleted", "hel/" + f: "forgotten", "mail/" + f: "forgotten"}
	if diff := cmp.Diff(want, exits); diff != "" {
		t.Errorf("exits (-want +got):\n%s", diff)
	}
	var docs int
	if err := e.pool.QueryRow(context.Background(), `SELECT count(*) FROM segment_customers WHERE company_id = $1 AND customer_id = ANY($2)`,
		co, []string{d, f}).Scan(&docs); err != nil || docs != 0 {
		t.Errorf("documents of the gone customers: %d (%v)", docs, err)
	}
	res := e.do(http.MethodGet, "/api/customers/"+f+"/segments/", bearer(admin))
	res.wantStatus(t, http.StatusOK)
	if want := `{"segments":[]}`; string(res.body) != want {
		t.Errorf("the forgotten customer's segments: %s", res.body)
	}
}

// TestSegmentMembersFollowSalesAndEventDeletions: a sales leaf counts
// the customer's counted sales (a cancelled one leaves), with its revenue
// and its products; a deleted event no longer counts.
func TestSegmentMembersFollowSalesAndEventDeletions(t *testing.T) {
	e := newEnv(t)
	e.runProjections(retrievalproj.NewCustomers(e.keys), retrievalproj.NewEvents(e.keys), retrievalproj.NewSales(e.keys),
		segments.NewMembers(e.keys, postgres.EventLog{}))
	e.runImports()
	admin := e.userToken(e.admin, acmeHost)
	co := e.acme.ID
	e.createSegment(admin, map[string]any{"segment_key": "big", "name": "Big P buyers", "rule": map[string]any{
		"sales": map[string]any{"min_revenue": 150, "product_id": "P"}}})
	e.createSegment(admin, map[string]any{"segment_key": "browsers", "name": "Browsers", "rule": map[string]any{
		"event": map[string]any{"type": "BROWSE", "where": []any{map[string]any{"field": "label", "eq": "home"}}}}})
	e.importAll(admin, "/api/customers/upload/", `[{"external_id": "C1"}, {"external_id": "C2"}]`)
	day := time.Now().UTC().Add(-time.Hour).Format("2006-01-02")
	e.importAll(admin, "/api/sales/upload/", fmt.Sprintf(`[
		{"sale_external_id": "S1", "sale_date": %q, "sale_customer_id": "C1", "product_id": "P", "quantity": 2, "unit_price": 100},
		{"sale_external_id": "S2", "sale_date": %q, "sale_customer_id": "C2", "product_id": "Q", "quantity": 2, "unit_price": 100}]`, day, day))
	e.importAll(admin, "/api/events/upload/", `[{"type": "BROWSE", "date": "2025-01-02", "customer_id": "C2", "label": "home"},
		{"type": "BROWSE", "date": "2025-01-02", "customer_id": "C1", "label": "cart"}]`)
	if got, _ := e.segmentState(co); len(got) != 2 || got[0][:7] != "big/C1/" || got[1][:12] != "browsers/C2/" {
		t.Fatalf("members %v", got)
	}
	e.importAll(admin, "/api/sales/upload/", `[{"sale_external_id": "S1", "sale_state": "CANCELLED"}]`)
	var id int64
	if err := e.pool.QueryRow(context.Background(), `SELECT event_id FROM segment_activity WHERE company_id = $1 AND fields->>'label' = 'home'`, co).Scan(&id); err != nil {
		t.Fatal(err)
	}
	e.importAll(admin, "/api/events/upload/", fmt.Sprintf(`[{"id": %d, "is_deleted": true}]`, id))
	got, history := e.segmentState(co)
	if len(got) != 0 || len(history) != 4 || history[2].Cause != segments.CauseSale || history[3].Cause != segments.CauseEvent {
		t.Errorf("members %v, history %+v", got, history)
	}
}

// TestSegmentRuleChangeFiresDueTimersFirst: a window that passed before a
// rule change, its timer not fired yet (no timer loop runs here), is
// recorded at the instant it passed, not at the change: the backfill
// fires the due timers on the rules that set them before deciding the
// new ones, as a rebuild does.
func TestSegmentRuleChangeFiresDueTimersFirst(t *testing.T) {
	e := newEnv(t)
	e.runProjections(retrievalproj.NewCustomers(e.keys), retrievalproj.NewEvents(e.keys), segments.NewMembers(e.keys, postgres.EventLog{}))
	e.runImports()
	admin := e.userToken(e.admin, acmeHost)
	co := e.acme.ID
	e.createSegment(admin, map[string]any{"segment_key": "hot", "name": "hot", "rule": map[string]any{
		"event": map[string]any{"type": "BROWSE", "within_days": 1}}})
	began := time.Now()
	e.importAll(admin, "/api/customers/upload/", `[{"external_id": "C1"}]`)
	// The event must be committed inside its window, which closes soon
	// after: the window is left open for four times what the import of
	// one customer took, the import of one event costing about the same
	// (under -race on a loaded machine, seconds).
	open := max(2*time.Second, 4*time.Since(began))
	eventAt := time.Now().UTC().Add(-24*time.Hour + open).Truncate(time.Second)
	e.importAll(admin, "/api/events/upload/", fmt.Sprintf(`[{"type": "BROWSE", "label": "x", "date": %q, "customer_id": "C1"}]`, eventAt.Format(time.RFC3339)))
	closes := eventAt.Add(24 * time.Hour)
	// The wait is as long as the window was left open, and more: on a
	// loaded machine that was more than a fixed bound (CI waited 10 s
	// for a window of 12).
	e.waitFor(time.Until(closes)+10*time.Second, "the window to pass", func() bool { return time.Now().After(closes) })
	e.createSegment(admin, map[string]any{"segment_key": "all", "name": "all", "rule": map[string]any{"field": "id", "exists": true}})
	e.waitProjections()
	_, history := e.segmentState(co)
	if len(history) != 3 {
		t.Fatalf("history %+v, want an entry, an exit when the window closed at %s, an entry by the new rule", history, closes)
	}
	c1 := e.customerIDOf(co, "C1")
	want := []historyRow{
		{"hot", c1, true, history[0].At, segments.CauseEvent},
		{"hot", c1, false, closes, segments.CauseTime},
		{"all", c1, true, history[2].At, segments.CauseRule},
	}
	if diff := cmp.Diff(want, history); diff != "" {
		t.Errorf("history (-want +got):\n%s", diff)
	}
}
