package delivery_test

import (
	"bufio"
	"encoding/json"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/clientele/clientele/delivery"
	"github.com/clientele/clientele/domain/datatarget"
	"github.com/clientele/clientele/internal/testlog"
)

// failureLines are the "a delivery failed" lines of a JSON log.
func failureLines(t *testing.T, log string) []map[string]any {
	t.Helper()
	var out []map[string]any
	sc := bufio.NewScanner(strings.NewReader(log))
	for sc.Scan() {
		var line map[string]any
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatalf("log line %q: %v", sc.Text(), err)
		}
		if line["msg"] == "delivery: a delivery failed" {
			out = append(out, line)
		}
	}
	return out
}

// TestFailedDeliveryLogged: the server logs a failed delivery with the
// outlet and the reason, its URL's query masked and no header value; at
// most one line per outlet per minute (by the deliverer's clock), the
// next line counting the failures left out.
func TestFailedDeliveryLogged(t *testing.T) {
	h := newHarness(t)
	addr := reservedAddr(t) // nothing listens: every attempt is refused
	o := h.outlet("http://"+addr+"/hook?api_key=query-secret-42", false, func(s *datatarget.OutletSpec) {
		s.Request.Headers = map[string]string{"Authorization": "Bearer header-secret-77"}
	})
	h.post(1)
	var buf testlog.Buffer
	var ahead atomic.Int64 // the clock's advance, in nanoseconds
	h.run(h.config(func(c *delivery.Config) {
		c.Logger = slog.New(slog.NewJSONHandler(&buf, nil))
		c.Now = func() time.Time { return time.Now().Add(time.Duration(ahead.Load())) }
	}))
	waitFor(t, 10*time.Second, "five failures", func() bool { return h.countFails(o.ID, "connection refused") >= 5 })
	lines := failureLines(t, buf.String())
	if len(lines) != 1 {
		t.Fatalf("%d lines within a minute, want 1:\n%s", len(lines), buf.String())
	}
	first := lines[0]
	reason, _ := first["reason"].(string)
	if first["outlet"] != o.ID || first["datatarget"] != h.dt.ID || first["suppressed"] != 0.0 ||
		!strings.Contains(reason, "connection refused") || !strings.Contains(reason, "api_key=****") {
		t.Errorf("first line: %v", first)
	}

	failed := h.countFails(o.ID, "connection refused")
	ahead.Store(int64(delivery.FailureLogInterval + time.Second))
	waitFor(t, 10*time.Second, "the next line", func() bool { return len(failureLines(t, buf.String())) == 2 })
	second := failureLines(t, buf.String())[1]
	if n, _ := second["suppressed"].(float64); int(n) < failed-1 {
		t.Errorf("second line: %v; want at least %d failures left out", second, failed-1)
	}
	for _, secret := range []string{"query-secret-42", "header-secret-77"} {
		if strings.Contains(buf.String(), secret) {
			t.Errorf("the log holds %q:\n%s", secret, buf.String())
		}
	}
}
