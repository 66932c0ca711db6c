package delivery_test

import (
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/clientele/clientele/delivery"
	"github.com/clientele/clientele/domain/datatarget"
)

// TestGuardRefusesLoopback: without an allow-list, a receiver on the
// loopback network is refused, whether the URL names the address or a
// name that resolves to it (the dialled address is checked), and the
// refusal is a logged failure that is retried like any other.
func TestGuardRefusesLoopback(t *testing.T) {
	for name, url := range map[string]func(r *receiver) string{
		"address": func(r *receiver) string { return r.url() },
		"name":    func(r *receiver) string { return strings.Replace(r.url(), "127.0.0.1", "localhost", 1) },
	} {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t)
			rcv := newReceiver(t)
			var calls atomic.Int32
			rcv.setBehaviour(func(_ http.ResponseWriter, _ *http.Request, _ []byte) bool { calls.Add(1); return false })
			o := h.outlet(url(rcv), true)
			h.post(2)
			h.run(h.config(func(c *delivery.Config) { c.AllowCIDRs = nil }))
			waitFor(t, 10*time.Second, "two refusals", func() bool { return h.countFails(o.ID, "loopback") >= 2 })
			if calls.Load() != 0 {
				t.Errorf("the receiver got %d requests", calls.Load())
			}
			e := h.entries(o.ID)[0]
			if e.Status != datatarget.StatusFail || e.HTTPStatus != 0 || !strings.Contains(e.FailReason, "refused to connect to 127.0.0.1 (loopback address)") ||
				!strings.Contains(e.FailReason, "--webhook-allow-cidrs") {
				t.Errorf("entry %+v", e)
			}
			// The request that would have been sent is logged all the same.
			if !e.HTTPRequestAvailable || !strings.HasPrefix(e.HTTPRequest, "POST /hook HTTP/1.1\r\n") {
				t.Errorf("request %q", e.HTTPRequest)
			}
		})
	}
}
