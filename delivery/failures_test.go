package delivery_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/clientele/clientele/delivery"
	"github.com/clientele/clientele/domain/datatarget"
)

// countFails counts the outlet's failed attempts whose reason contains
// substr.
func (h *harness) countFails(outletID, substr string) int {
	n := 0
	for _, e := range h.entries(outletID) {
		if e.Status == datatarget.StatusFail && strings.Contains(e.FailReason, substr) {
			n++
		}
	}
	return n
}

// TestReceiverDownErroringSlowThenBack: the receiver is first not
// listening, then answers 500, then too slowly, then well. Nothing is
// lost or reordered, the failed batch is retried as it was (never
// overtaken), and every attempt is logged with its raw request and, when
// one came, its reply.
func TestReceiverDownErroringSlowThenBack(t *testing.T) {
	h := newHarness(t)
	addr := reservedAddr(t)
	o := h.outlet("http://"+addr+"/hook", true)
	h.post(250)
	h.run(h.config(func(c *delivery.Config) { c.RequestTimeout = 300 * time.Millisecond }))

	// Down: connection refused.
	waitFor(t, 10*time.Second, "two refused attempts", func() bool { return h.countFails(o.ID, "connection refused") >= 2 })

	// Up, but failing.
	rcv := &receiver{t: t}
	var mode atomic.Value
	mode.Store("500")
	rcv.behave = func(w http.ResponseWriter, _ *http.Request, _ []byte) bool {
		switch mode.Load() {
		case "500":
			http.Error(w, "broken", http.StatusInternalServerError)
			return true
		case "slow":
			time.Sleep(500 * time.Millisecond)
			w.WriteHeader(http.StatusOK) // too late: the sender gave up
			return true
		}
		return false
	}
	rcv.srv = httptest.NewUnstartedServer(http.HandlerFunc(rcv.serve))
	rcv.srv.Listener.Close()
	rcv.srv.Listener = listenReserved(t, addr)
	rcv.srv.Start()
	t.Cleanup(rcv.srv.Close)
	waitFor(t, 10*time.Second, "two 500 answers", func() bool { return h.countFails(o.ID, "500 Internal Server Error") >= 2 })
	mode.Store("slow")
	waitFor(t, 10*time.Second, "two timeouts", func() bool { return h.countFails(o.ID, "timeout") >= 2 })
	mode.Store("ok")
	waitFor(t, 10*time.Second, "every message", func() bool { return len(rcv.accepted()) >= 250 })
	checkExactly(t, rcv.accepted(), 250)
	waitFor(t, 5*time.Second, "the progress", func() bool { return h.outletState(o.ID).Progress.LastDeliveredMessageNumber == 250 })

	entries := h.entries(o.ID)
	var fails int
	for i, e := range entries {
		if e.EntryNumber != int64(i+1) {
			t.Fatalf("entry %d numbered %d", i+1, e.EntryNumber)
		}
		if e.Status == datatarget.StatusOK {
			continue
		}
		fails++
		// Every failure is the first batch, sent again as it was.
		if e.BatchNumber != 1 || e.FirstMessageNumber != 1 || e.BatchSize != 100 {
			t.Errorf("failed entry %d: batch %d, first %d, size %d", e.EntryNumber, e.BatchNumber, e.FirstMessageNumber, e.BatchSize)
		}
		if !e.HTTPRequestAvailable || !strings.HasPrefix(e.HTTPRequest, "POST /hook HTTP/1.1\r\n") || !strings.HasSuffix(e.HTTPRequest, `{"n":100}]}`) {
			t.Errorf("entry %d (%s): raw request %q", e.EntryNumber, e.FailReason, e.HTTPRequest)
		}
		switch {
		case strings.Contains(e.FailReason, "connection refused"), strings.Contains(e.FailReason, "timeout"):
			if e.HTTPReply != "" || e.HTTPStatus != 0 {
				t.Errorf("entry %d (%s): reply %d %q", e.EntryNumber, e.FailReason, e.HTTPStatus, e.HTTPReply)
			}
		case strings.Contains(e.FailReason, "500"):
			if e.HTTPStatus != 500 || !strings.HasPrefix(e.HTTPReply, "HTTP/1.1 500 Internal Server Error\r\n") || !strings.HasSuffix(e.HTTPReply, "broken\n") {
				t.Errorf("entry %d: reply %d %q", e.EntryNumber, e.HTTPStatus, e.HTTPReply)
			}
		default:
			t.Errorf("entry %d: unexpected failure %q", e.EntryNumber, e.FailReason)
		}
	}
	st := h.outletState(o.ID).Progress
	if fails < 6 || len(entries)-fails != int(st.DeliveredBatchCount) || st.DeliveredBatchCount != 3 {
		t.Errorf("%d entries, %d failed, %d batches delivered", len(entries), fails, st.DeliveredBatchCount)
	}
}

// TestGoneDisables: a 410 disables the outlet and stops its deliveries.
func TestGoneDisables(t *testing.T) {
	h := newHarness(t)
	rcv := newReceiver(t)
	var calls atomic.Int32
	rcv.setBehaviour(func(w http.ResponseWriter, _ *http.Request, _ []byte) bool {
		calls.Add(1)
		w.WriteHeader(http.StatusGone)
		return true
	})
	o := h.outlet(rcv.url(), true)
	h.post(10)
	h.run(h.config())
	waitFor(t, 10*time.Second, "the outlet disabled", func() bool { return !h.outletState(o.ID).Enabled })
	time.Sleep(100 * time.Millisecond) // ten polls: nothing more is sent
	h.post(1)
	time.Sleep(100 * time.Millisecond)
	if calls.Load() != 1 {
		t.Errorf("%d requests, want 1", calls.Load())
	}
	e := h.entries(o.ID)
	if len(e) != 1 || e[0].Status != datatarget.StatusFail || e[0].HTTPStatus != 410 || !strings.Contains(e[0].FailReason, "disabled") {
		t.Errorf("log %+v", e)
	}
	if st := h.outletState(o.ID).Progress; st.LastDeliveredMessageNumber != 0 || st.DeliveredBatchCount != 0 {
		t.Errorf("progress %+v after a failure", st)
	}
}

// TestRetryAfter: a receiver's Retry-After (seconds, or an HTTP date)
// replaces the backoff.
func TestRetryAfter(t *testing.T) {
	for name, value := range map[string]func() string{
		"seconds":   func() string { return "1" },
		"HTTP date": func() string { return time.Now().Add(2 * time.Second).UTC().Format(http.TimeFormat) },
	} {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t)
			rcv := newReceiver(t)
			var calls atomic.Int32
			rcv.setBehaviour(func(w http.ResponseWriter, _ *http.Request, _ []byte) bool {
				if calls.Add(1) > 1 {
					return false
				}
				w.Header().Set("Retry-After", value())
				w.WriteHeader(http.StatusTooManyRequests)
				return true
			})
			o := h.outlet(rcv.url(), true)
			h.post(3)
			h.run(h.config())
			// The receiver has the batch before the worker logs the reply.
			waitFor(t, 10*time.Second, "delivery logged", func() bool {
				return len(rcv.accepted()) == 3 && len(h.entries(o.ID)) == 2
			})
			e := h.entries(o.ID)
			if len(e) != 2 || e[0].Status != datatarget.StatusFail || e[1].Status != datatarget.StatusOK {
				t.Fatalf("log %+v", e)
			}
			// An HTTP date has a resolution of one second.
			if gap := e[1].Date.Sub(e[0].Date); gap < 900*time.Millisecond {
				t.Errorf("retried after %v, before Retry-After", gap)
			}
			if !strings.Contains(e[0].FailReason, "Retry-After") {
				t.Errorf("fail reason %q", e[0].FailReason)
			}
		})
	}
}
