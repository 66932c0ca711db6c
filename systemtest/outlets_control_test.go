package systemtest_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// gatedSink is a webhook receiver of one-message requests ({"n": k}) that
// keeps the numbers it accepts and can hold a chosen message until the
// test lets it through.
type gatedSink struct {
	srv *httptest.Server

	mu     sync.Mutex
	got    []int
	holdAt int           // the message to hold (0: none)
	held   chan struct{} // closed when the held message arrives
	open   chan struct{} // closed by the test to let it through
}

func newGatedSink(t *testing.T) *gatedSink {
	s := &gatedSink{}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var m struct{ N int }
		if err := json.Unmarshal(b, &m); err != nil {
			t.Errorf("receiver: %s", b)
			return
		}
		s.mu.Lock()
		hold, held, open := s.holdAt == m.N, s.held, s.open
		s.mu.Unlock()
		if hold {
			close(held)
			<-open
		}
		s.mu.Lock()
		s.got = append(s.got, m.N)
		s.mu.Unlock()
	}))
	t.Cleanup(s.srv.Close)
	return s
}

// hold makes the sink hold message n when it arrives; wait for it on the
// first channel, let it through by closing the second.
func (s *gatedSink) hold(n int) (held <-chan struct{}, open chan<- struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.holdAt, s.held, s.open = n, make(chan struct{}), make(chan struct{})
	return s.held, s.open
}

func (s *gatedSink) numbers() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]int(nil), s.got...)
}

// postNumbered posts messages {"n": from} .. {"n": to}.
func (e *env) postNumbered(token, datatargetID string, from, to int) {
	e.t.Helper()
	msgs := make([]map[string]int, 0, to-from+1)
	for n := from; n <= to; n++ {
		msgs = append(msgs, map[string]int{"n": n})
	}
	e.do(http.MethodPost, "/api/datatargets/"+datatargetID+"/post/", bearer(token), jsonBody(map[string]any{"messages": msgs})).wantStatus(e.t, http.StatusOK)
}

// wantSequence fails the test unless got is from..to, in order, each once.
func wantSequence(t *testing.T, what string, got []int, from, to int) {
	t.Helper()
	ok := len(got) == to-from+1
	for i := 0; ok && i < len(got); i++ {
		ok = got[i] == from+i
	}
	if !ok {
		t.Errorf("%s received %v, want %d..%d in order, each once", what, got, from, to)
	}
}

// TestOutletPauseResume: an admin pauses an outlet while a request is in
// flight; that request ends and is recorded, nothing more is sent while
// messages keep being posted (and numbered), and resuming sends the first
// undelivered message: every message arrives once, in order. Staff and
// integrations may not pause.
func TestOutletPauseResume(t *testing.T) {
	e := newEnv(t)
	admin := e.userToken(e.admin, acmeHost)
	staff := e.userToken(e.staff, acmeHost)
	id := e.createDatatarget(admin, "orders")
	rcv := newGatedSink(t)
	oid := e.createOutlet(admin, id, rcv.srv.URL+"/hook", false)
	path := "/api/datatargets/" + id + "/outlets/" + oid + "/"

	integ := e.createIntegration(admin, "shop")
	bare := e.createToken(admin, map[string]any{"owner_id": "integrations/" + integ}).AccessToken.Token
	for _, token := range []string{staff, bare} {
		e.do(http.MethodPatch, path, bearer(token), jsonBody(map[string]any{"enabled": false})).wantError(t, http.StatusForbidden, "forbidden")
	}

	held, open := rcv.hold(5)
	e.postNumbered(admin, id, 1, 20)
	e.runDeliverer()
	<-held
	res := e.do(http.MethodPatch, path, bearer(admin), jsonBody(map[string]any{"enabled": false}))
	res.wantStatus(t, http.StatusOK)
	var o outletAnswer
	res.decode(t, &o)
	if o.Outlet.Enabled || o.Outlet.State != "paused" || o.Outlet.OldestUndeliveredAt == nil {
		t.Errorf("paused, the outlet answers %s", res.body)
	}
	close(open)
	// The request in flight is recorded, and the worker stops before the
	// next one: it releases the outlet's lease.
	e.waitDelivered(oid, 5)
	e.waitLeaseReleased(oid)
	e.postNumbered(admin, id, 21, 30)
	wantSequence(t, "while paused, the receiver", rcv.numbers(), 1, 5)
	var d datatargetAnswer
	e.do(http.MethodGet, "/api/datatargets/"+id+"/", bearer(admin)).decode(t, &d)
	if d.Datatarget.LastMessageNumber != 30 {
		t.Errorf("while paused the datatarget numbered up to %d, want 30", d.Datatarget.LastMessageNumber)
	}

	e.do(http.MethodPatch, path, bearer(admin), jsonBody(map[string]any{"enabled": true})).wantStatus(t, http.StatusOK)
	e.waitDelivered(oid, 30)
	wantSequence(t, "after the resume, the receiver", rcv.numbers(), 1, 30)
	e.do(http.MethodGet, path, bearer(admin)).decode(t, &o)
	if o.Outlet.State != "delivering" || o.Outlet.OldestUndeliveredAt != nil {
		t.Errorf("caught up, the outlet is %+v", o.Outlet)
	}
}

// TestDatatargetPauseResume: PATCH enabled on a datatarget pauses the
// delivery of its outlets (posting goes on) and resumes each where it
// stopped; staff may not.
func TestDatatargetPauseResume(t *testing.T) {
	e := newEnv(t)
	admin := e.userToken(e.admin, acmeHost)
	staff := e.userToken(e.staff, acmeHost)
	id := e.createDatatarget(admin, "orders")
	rcv := newGatedSink(t)
	oid := e.createOutlet(admin, id, rcv.srv.URL+"/hook", false)
	path := "/api/datatargets/" + id + "/"

	e.do(http.MethodPatch, path, bearer(staff), jsonBody(map[string]any{"enabled": false})).wantError(t, http.StatusForbidden, "forbidden")
	held, open := rcv.hold(3)
	e.postNumbered(admin, id, 1, 10)
	e.runDeliverer()
	<-held
	res := e.do(http.MethodPatch, path, bearer(admin), jsonBody(map[string]any{"enabled": false}))
	res.wantStatus(t, http.StatusOK)
	var d datatargetAnswer
	res.decode(t, &d)
	if d.Datatarget.Enabled {
		t.Errorf("paused, the datatarget answers %s", res.body)
	}
	close(open)
	e.waitDelivered(oid, 3)
	e.waitLeaseReleased(oid)
	e.postNumbered(admin, id, 11, 12) // posting goes on
	wantSequence(t, "while paused, the receiver", rcv.numbers(), 1, 3)
	// Staff may still rename it.
	e.do(http.MethodPatch, path, bearer(staff), jsonBody(map[string]any{"name": "renamed"})).wantStatus(t, http.StatusOK)

	e.do(http.MethodPatch, path, bearer(admin), jsonBody(map[string]any{"enabled": true})).wantStatus(t, http.StatusOK)
	e.waitDelivered(oid, 12)
	wantSequence(t, "after the resume, the receiver", rcv.numbers(), 1, 12)
}

// TestOutletChangeAppliesFromTheNextRequest: a URL changed while a request
// is in flight leaves that request alone; the next one goes to the new
// URL, and nothing is lost or sent twice.
func TestOutletChangeAppliesFromTheNextRequest(t *testing.T) {
	e := newEnv(t)
	admin := e.userToken(e.admin, acmeHost)
	id := e.createDatatarget(admin, "orders")
	first, second := newGatedSink(t), newGatedSink(t)
	oid := e.createOutlet(admin, id, first.srv.URL+"/hook", false)
	path := "/api/datatargets/" + id + "/outlets/" + oid + "/"

	held, open := first.hold(4)
	e.postNumbered(admin, id, 1, 10)
	e.runDeliverer()
	<-held
	e.do(http.MethodPatch, path, bearer(admin), jsonBody(map[string]any{
		"request": map[string]any{"url": second.srv.URL + "/hook"}, "min_request_interval": "1",
	})).wantStatus(t, http.StatusOK)
	close(open)
	e.waitDelivered(oid, 10)
	wantSequence(t, "the first receiver", first.numbers(), 1, 4)
	wantSequence(t, "the second receiver", second.numbers(), 5, 10)

	e.do(http.MethodPatch, path, bearer(admin), jsonBody(map[string]any{"request": map[string]any{"url": "ftp://x"}})).
		wantError(t, http.StatusUnprocessableEntity, "validation_error")
	e.do(http.MethodPatch, "/api/datatargets/"+id+"/outlets/nope/", bearer(admin), jsonBody(map[string]any{"enabled": true})).
		wantError(t, http.StatusNotFound, "not_found")
}

// TestDeleteOutletAndDatatarget: a deleted outlet, and a deleted
// datatarget with its outlets, answer 404 and deliver nothing more; only
// admins delete.
func TestDeleteOutletAndDatatarget(t *testing.T) {
	e := newEnv(t)
	admin := e.userToken(e.admin, acmeHost)
	staff := e.userToken(e.staff, acmeHost)
	id := e.createDatatarget(admin, "orders")
	rcv := newGatedSink(t)
	oid := e.createOutlet(admin, id, rcv.srv.URL+"/hook", false)
	other := e.createOutlet(admin, id, rcv.srv.URL+"/hook", false)
	opath := "/api/datatargets/" + id + "/outlets/" + oid + "/"

	e.do(http.MethodDelete, opath, bearer(staff)).wantError(t, http.StatusForbidden, "forbidden")
	e.do(http.MethodDelete, "/api/datatargets/"+id+"/", bearer(staff)).wantError(t, http.StatusForbidden, "forbidden")

	e.do(http.MethodDelete, opath, bearer(admin)).wantStatus(t, http.StatusNoContent)
	e.do(http.MethodGet, opath, bearer(admin)).wantError(t, http.StatusNotFound, "not_found")
	e.do(http.MethodDelete, opath, bearer(admin)).wantError(t, http.StatusNotFound, "not_found")
	e.postNumbered(admin, id, 1, 3)
	e.runDeliverer()
	e.waitDelivered(other, 3)
	if got := rcv.numbers(); len(got) != 3 {
		t.Errorf("with one outlet deleted the receiver got %v, want 1..3 once", got)
	}

	e.do(http.MethodDelete, "/api/datatargets/"+id+"/", bearer(admin)).wantStatus(t, http.StatusNoContent)
	e.do(http.MethodGet, "/api/datatargets/"+id+"/", bearer(admin)).wantError(t, http.StatusNotFound, "not_found")
	e.do(http.MethodGet, "/api/datatargets/"+id+"/outlets/"+other+"/", bearer(admin)).wantError(t, http.StatusNotFound, "not_found")
	e.do(http.MethodPost, "/api/datatargets/"+id+"/post/", bearer(admin), jsonBody(map[string]any{"messages": []any{map[string]int{"n": 4}}})).
		wantError(t, http.StatusNotFound, "not_found")
	e.do(http.MethodPatch, "/api/datatargets/"+id+"/", bearer(admin), jsonBody(map[string]any{"name": "back"})).
		wantError(t, http.StatusNotFound, "not_found")
	var list struct{ Datatargets []json.RawMessage }
	e.do(http.MethodGet, "/api/datatargets/", bearer(admin)).decode(t, &list)
	if len(list.Datatargets) != 0 {
		t.Errorf("the list still holds %s", list.Datatargets)
	}
}

// waitLeaseReleased waits until no worker holds the outlet: its worker
// stopped (a paused outlet's stops before its next request).
func (e *env) waitLeaseReleased(outletID string) {
	e.t.Helper()
	waitUntil(e.t, "the outlet's worker to stop", func() bool {
		var holder string
		if err := e.pool.QueryRow(e.t.Context(), `SELECT lease_holder FROM outlet_deliveries WHERE outlet_id = $1`, outletID).Scan(&holder); err != nil {
			e.t.Fatal(err)
		}
		return holder == ""
	})
}

// waitUntil waits, up to 20 seconds, until ok holds.
func waitUntil(t *testing.T, what string, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); !ok(); {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestOutletRewind: a rewind sends every message above the number again,
// in order, after the ones already sent; its answer shows the outlet at
// that number; a number above the outlet's position is 422, and only
// admins rewind.
func TestOutletRewind(t *testing.T) {
	e := newEnv(t)
	admin := e.userToken(e.admin, acmeHost)
	staff := e.userToken(e.staff, acmeHost)
	id := e.createDatatarget(admin, "orders")
	rcv := newGatedSink(t)
	oid := e.createOutlet(admin, id, rcv.srv.URL+"/hook", false)
	path := "/api/datatargets/" + id + "/outlets/" + oid + "/rewind/"
	e.postNumbered(admin, id, 1, 10)
	e.runDeliverer()
	e.waitDelivered(oid, 10)

	e.do(http.MethodPost, path, bearer(staff), jsonBody(map[string]any{"after": 4})).wantError(t, http.StatusForbidden, "forbidden")
	e.do(http.MethodPost, path, bearer(admin), jsonBody(map[string]any{"after": 11})).wantError(t, http.StatusUnprocessableEntity, "validation_error")
	e.do(http.MethodPost, path, bearer(admin), jsonBody(map[string]any{})).wantError(t, http.StatusUnprocessableEntity, "validation_error")
	// The first message sent again is held until the answer is read: a
	// deliverer may otherwise send them all again before it is.
	_, open := rcv.hold(5)
	res := e.do(http.MethodPost, path, bearer(admin), jsonBody(map[string]any{"after": 4}))
	res.wantStatus(t, http.StatusOK)
	var o outletAnswer
	res.decode(t, &o)
	if o.Outlet.LastDeliveredMessageNumber != 4 {
		t.Errorf("rewound, the outlet answers %s", res.body)
	}
	close(open)
	waitUntil(t, "the messages sent again", func() bool { return len(rcv.numbers()) >= 16 })
	e.waitDelivered(oid, 10)
	got := rcv.numbers()
	wantSequence(t, "before the rewind, the receiver", got[:10], 1, 10)
	wantSequence(t, "after the rewind, the receiver", got[10:], 5, 10)
}
