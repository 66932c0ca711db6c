package delivery_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/clientele/clientele/domain/datatarget"
)

// TestOrderedBatches delivers thousands of messages posted before and
// while the worker runs: every message once, in order, in batches of at
// most 100, each a logged OK attempt.
func TestOrderedBatches(t *testing.T) {
	h := newHarness(t)
	rcv := newReceiver(t)
	o := h.outlet(rcv.url(), true)
	h.post(1234)
	h.run(h.config())
	for range 4 {
		h.post(500)
		time.Sleep(20 * time.Millisecond)
	}
	const total = 3234
	waitFor(t, 30*time.Second, "every message", func() bool { return len(rcv.accepted()) >= total })
	checkExactly(t, rcv.accepted(), total)

	waitFor(t, 5*time.Second, "the progress", func() bool { return h.outletState(o.ID).Progress.LastDeliveredMessageNumber == total })
	st := h.outletState(o.ID)
	rcv.mu.Lock()
	requests, overlaps, headers := rcv.requests, rcv.overlaps, rcv.headers
	rcv.mu.Unlock()
	if st.Progress.DeliveredBatchCount != int64(requests) || requests < total/100 || overlaps != 0 {
		t.Errorf("%d batches counted, %d requests, %d overlapping", st.Progress.DeliveredBatchCount, requests, overlaps)
	}
	entries := h.entries(o.ID)
	if len(entries) != requests {
		t.Fatalf("%d log entries for %d requests", len(entries), requests)
	}
	next := int64(1)
	for i, e := range entries {
		if e.EntryNumber != int64(i+1) || e.BatchNumber != int64(i+1) || e.Status != datatarget.StatusOK || e.HTTPStatus != 200 ||
			e.FirstMessageNumber != next || e.BatchSize < 1 || e.BatchSize > 100 || !e.HTTPRequestAvailable {
			t.Fatalf("entry %d: %+v", i+1, e)
		}
		next += int64(e.BatchSize)
		if e.Date.Location() != time.UTC || e.Date.Nanosecond()%1000 != 0 {
			t.Errorf("entry %d: date %v is not UTC microseconds", i+1, e.Date)
		}
	}
	h0 := headers[0]
	if h0.Get("Content-Type") != "application/json" || h0.Get("X-Api-Key") != "k1" || h0.Get("Webhook-Signature") != "" {
		t.Errorf("request headers %v", h0)
	}
	// The raw texts are what crossed the wire, the outlet's header values
	// masked (they are its credentials).
	e := entries[0]
	if !strings.HasPrefix(e.HTTPRequest, "POST /hook HTTP/1.1\r\n") || !strings.Contains(e.HTTPRequest, "\r\nX-Api-Key: ****\r\n") ||
		!strings.HasSuffix(e.HTTPRequest, `{"n":100}]}`) {
		t.Errorf("raw request:\n%s", e.HTTPRequest)
	}
	if !strings.Contains(e.HTTPRequest, "\r\n\r\n{\"source\":\"clientele\",\"items\":[{\"n\":1},{\"n\":2},") {
		t.Errorf("raw request body:\n%s", e.HTTPRequest)
	}
	if !strings.HasPrefix(e.HTTPReply, "HTTP/1.1 200 OK\r\n") || !strings.HasSuffix(e.HTTPReply, `{"ok":true}`) {
		t.Errorf("raw reply:\n%s", e.HTTPReply)
	}
}

// TestUnbatched sends one message per request, the message itself in the
// placeholder, with the configured method.
func TestUnbatched(t *testing.T) {
	h := newHarness(t)
	rcv := newReceiver(t)
	var methods []string
	rcv.setBehaviour(func(_ http.ResponseWriter, r *http.Request, _ []byte) bool {
		methods = append(methods, r.Method) // requests never overlap
		return false
	})
	o := h.outlet(rcv.url(), false, func(s *datatarget.OutletSpec) { s.Request.Method = "PUT" })
	if o.MaxBatchSize != 1 {
		t.Fatalf("max_batch_size %d", o.MaxBatchSize)
	}
	h.post(7)
	h.run(h.config())
	waitFor(t, 10*time.Second, "every message", func() bool { return len(rcv.accepted()) >= 7 })
	checkExactly(t, rcv.accepted(), 7)
	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	if rcv.requests != 7 || strings.Join(methods, ",") != "PUT,PUT,PUT,PUT,PUT,PUT,PUT" {
		t.Errorf("%d requests, methods %v", rcv.requests, methods)
	}
}

// TestMinRequestInterval spaces the starts of requests.
func TestMinRequestInterval(t *testing.T) {
	h := newHarness(t)
	rcv := newReceiver(t)
	var starts []time.Time
	rcv.setBehaviour(func(http.ResponseWriter, *http.Request, []byte) bool {
		starts = append(starts, time.Now())
		return false
	})
	h.outlet(rcv.url(), false, func(s *datatarget.OutletSpec) { s.MinRequestInterval = 60 })
	h.post(4)
	h.run(h.config())
	waitFor(t, 10*time.Second, "every message", func() bool { return len(rcv.accepted()) >= 4 })
	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	for i := 1; i < len(starts); i++ {
		// The receiver sees a request a little after it was started.
		if gap := starts[i].Sub(starts[i-1]); gap < 50*time.Millisecond {
			t.Errorf("requests %d and %d %v apart", i, i+1, gap)
		}
	}
}
