package systemtest_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// refusingSink accepts one-message requests ({"n": k}) but refuses (500)
// the numbers it is told to, for as long as it is told to.
type refusingSink struct {
	srv *httptest.Server

	mu      sync.Mutex
	got     []int
	refused map[int]bool
}

func newRefusingSink(t *testing.T, refuse ...int) *refusingSink {
	s := &refusingSink{refused: map[int]bool{}}
	for _, n := range refuse {
		s.refused[n] = true
	}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var m struct{ N int }
		if err := json.Unmarshal(b, &m); err != nil {
			t.Errorf("receiver: %s", b)
			return
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.refused[m.N] {
			http.Error(w, "never this one", http.StatusInternalServerError)
			return
		}
		s.got = append(s.got, m.N)
	}))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *refusingSink) accept(n int) {
	s.mu.Lock()
	delete(s.refused, n)
	s.mu.Unlock()
}

func (s *refusingSink) numbers() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]int(nil), s.got...)
}

type parkedAnswer struct {
	Parked []struct {
		ID                  string `json:"id"`
		FirstMessageNumber  int64  `json:"first_message_number"`
		LastMessageNumber   int64  `json:"last_message_number"`
		BatchSize           int    `json:"batch_size"`
		Attempts            int    `json:"attempts"`
		LastHTTPStatus      *int   `json:"last_http_status"`
		LastFailReason      string `json:"last_fail_reason"`
		RedeliveryRequested bool   `json:"redelivery_requested"`
	} `json:"parked"`
}

// TestParkedBatch: a receiver that refuses one message for ever makes
// the outlet park its batch after the policy's attempts and deliver the
// messages behind it; the gap shows in the outlet's parked_count and its
// log; redelivered once the receiver accepts it, the batch is sent, logged
// and leaves the list; another parked batch is discarded and never sent.
// Only admins redeliver and discard.
func TestParkedBatch(t *testing.T) {
	e := newEnv(t)
	admin := e.userToken(e.admin, acmeHost)
	staff := e.userToken(e.staff, acmeHost)
	id := e.createDatatarget(admin, "orders")
	rcv := newRefusingSink(t, 3, 8)
	res := e.do(http.MethodPost, "/api/datatargets/"+id+"/outlets/", bearer(admin), jsonBody(map[string]any{
		"outlet_type": "webhook", "request": map[string]any{"url": rcv.srv.URL + "/hook"},
		"failure_policy": map[string]any{"max_attempts": 3},
	}))
	res.wantStatus(t, http.StatusOK)
	var o outletAnswer
	res.decode(t, &o)
	oid := o.Outlet.ID
	path := "/api/datatargets/" + id + "/outlets/" + oid + "/"
	e.do(http.MethodPatch, path, bearer(admin), jsonBody(map[string]any{"failure_policy": map[string]any{"max_attempts": -1}})).
		wantError(t, http.StatusUnprocessableEntity, "validation_error")

	e.postNumbered(admin, id, 1, 6)
	e.runDeliverer()
	e.waitDelivered(oid, 6)
	wantSequence(t, "with 3 parked, the receiver", rcv.numbers()[2:], 4, 6)
	var parked parkedAnswer
	e.do(http.MethodGet, path+"parked/", bearer(admin)).decode(t, &parked)
	if len(parked.Parked) != 1 {
		t.Fatalf("parked %+v", parked)
	}
	p := parked.Parked[0]
	if p.ID != "1" || p.FirstMessageNumber != 3 || p.LastMessageNumber != 3 || p.BatchSize != 1 || p.Attempts != 3 ||
		p.LastHTTPStatus == nil || *p.LastHTTPStatus != 500 || p.RedeliveryRequested {
		t.Errorf("parked %+v", p)
	}
	var counters struct {
		Outlet struct {
			ParkedCount                int64 `json:"parked_count"`
			LastDeliveredMessageNumber int64 `json:"last_delivered_message_number"`
			FailurePolicy              struct {
				MaxAttempts int `json:"max_attempts"`
			} `json:"failure_policy"`
		} `json:"outlet"`
	}
	e.do(http.MethodGet, path, bearer(admin)).decode(t, &counters)
	if counters.Outlet.ParkedCount != 1 || counters.Outlet.LastDeliveredMessageNumber != 6 || counters.Outlet.FailurePolicy.MaxAttempts != 3 {
		t.Errorf("outlet %+v", counters.Outlet)
	}
	var log struct {
		Entries []struct {
			FirstMessageNumber int64  `json:"first_message_number"`
			Status             string `json:"status"`
			FailReason         string `json:"fail_reason"`
		} `json:"entries"`
	}
	e.do(http.MethodGet, path+"log/", bearer(admin), withQuery("order", "ascending")).decode(t, &log)
	var fails []string
	for _, l := range log.Entries {
		if l.FirstMessageNumber == 3 {
			fails = append(fails, l.Status+":"+l.FailReason)
		}
	}
	if len(fails) != 3 || !strings.HasSuffix(fails[2], "(batch parked)") || strings.HasSuffix(fails[1], "(batch parked)") {
		t.Errorf("the log of message 3: %q", fails)
	}

	// Redelivery: staff may not; an admin's goes ahead of the queue.
	e.do(http.MethodPost, path+"parked/1/redeliver/", bearer(staff)).wantError(t, http.StatusForbidden, "forbidden")
	e.do(http.MethodPost, path+"parked/redeliver/", bearer(staff)).wantError(t, http.StatusForbidden, "forbidden")
	e.do(http.MethodPost, path+"parked/9/redeliver/", bearer(admin)).wantError(t, http.StatusNotFound, "not_found")
	rcv.accept(3)
	e.do(http.MethodPost, path+"parked/redeliver/", bearer(admin)).wantStatus(t, http.StatusOK)
	waitUntil(t, "the redelivery", func() bool {
		var n int
		if err := e.pool.QueryRow(t.Context(), `SELECT count(*) FROM outlet_parked WHERE outlet_id = $1`, oid).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n == 0
	})
	if got := rcv.numbers(); len(got) != 6 || got[5] != 3 {
		t.Errorf("after the redelivery the receiver got %v, want 1, 2, 4, 5, 6, 3", got)
	}
	e.do(http.MethodGet, path+"log/", bearer(admin)).decode(t, &log)
	if l := log.Entries[0]; l.FirstMessageNumber != 3 || l.Status != "OK" {
		t.Errorf("the last entry %+v, want the redelivery of 3", l)
	}

	// Discarding.
	e.postNumbered(admin, id, 7, 9)
	e.waitDelivered(oid, 9)
	e.do(http.MethodGet, path+"parked/", bearer(admin)).decode(t, &parked)
	if len(parked.Parked) != 1 || parked.Parked[0].ID != "2" || parked.Parked[0].FirstMessageNumber != 8 {
		t.Fatalf("parked %+v", parked)
	}
	e.do(http.MethodDelete, path+"parked/2/", bearer(staff)).wantError(t, http.StatusForbidden, "forbidden")
	e.do(http.MethodDelete, path+"parked/2/", bearer(admin)).wantStatus(t, http.StatusNoContent)
	e.do(http.MethodDelete, path+"parked/2/", bearer(admin)).wantError(t, http.StatusNotFound, "not_found")
	e.do(http.MethodGet, path+"parked/", bearer(admin)).decode(t, &parked)
	e.do(http.MethodGet, path, bearer(admin)).decode(t, &counters)
	if len(parked.Parked) != 0 || counters.Outlet.ParkedCount != 0 {
		t.Errorf("after discarding: parked %+v, parked_count %d", parked, counters.Outlet.ParkedCount)
	}
	rcv.accept(8)
	for _, n := range rcv.numbers() {
		if n == 8 {
			t.Errorf("the discarded message was sent: %v", rcv.numbers())
		}
	}
}
