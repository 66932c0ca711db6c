package delivery_test

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/clientele/clientele/delivery"
)

// lockedBuffer is a log destination written by several goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestFailReasonMasksTheURL: an attempt that gets no reply from a URL
// with credentials in its query and user information is logged with a
// reason that names the URL masked (Go's error text would print it as
// requested), while the raw request keeps what was sent; the worker's
// log lines show no credential either.
func TestFailReasonMasksTheURL(t *testing.T) {
	h := newHarness(t)
	o := h.outlet("http://hook:p4ss@"+reservedAddr(t)+"/hook?api_key=s3cr3t&region=eu-w3st", true)
	h.post(1)
	var logs lockedBuffer
	h.run(h.config(func(c *delivery.Config) {
		c.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}))
	waitFor(t, 10*time.Second, "two refused attempts", func() bool { return h.countFails(o.ID, "connection refused") >= 2 })
	for _, e := range h.entries(o.ID) {
		if !strings.HasPrefix(e.FailReason, `no reply: Post "http://hook:xxxxx@127.0.0.1:`) ||
			!strings.Contains(e.FailReason, `/hook?api_key=****&region=****": dial tcp 127.0.0.1:`) {
			t.Errorf("entry %d: fail reason %q", e.EntryNumber, e.FailReason)
		}
		for _, secret := range []string{"s3cr3t", "eu-w3st", "p4ss"} {
			if strings.Contains(e.FailReason, secret) {
				t.Errorf("entry %d: fail reason %q shows %q", e.EntryNumber, e.FailReason, secret)
			}
		}
		if !strings.HasPrefix(e.HTTPRequest, "POST /hook?api_key=s3cr3t&region=eu-w3st HTTP/1.1\r\n") {
			t.Errorf("entry %d: raw request %q", e.EntryNumber, e.HTTPRequest)
		}
	}
	if got := logs.String(); strings.Contains(got, "s3cr3t") || strings.Contains(got, "p4ss") {
		t.Errorf("the log shows a credential:\n%s", got)
	}
}

// TestInvalidStoredURLNotSent: an outlet whose URL holds a space (stored
// before such URLs were refused at creation) is not sent as it is, which
// would reach the receiver as a broken request line: each attempt is a
// failure saying why, and the receiver gets nothing.
func TestInvalidStoredURLNotSent(t *testing.T) {
	h := newHarness(t)
	rcv := newReceiver(t)
	var calls atomic.Int32
	rcv.setBehaviour(func(_ http.ResponseWriter, _ *http.Request, _ []byte) bool { calls.Add(1); return false })
	o := h.outlet(rcv.url()+"?api_key=secret", true)
	if _, err := h.pool.Exec(context.Background(), `UPDATE datatarget_outlets SET request = json_build_object('url', $1::text,
		'method', 'POST', 'headers', '{}'::json, 'format', 'json', 'content', '"{(data)}"'::json) WHERE id = $2`,
		rcv.url()+"?api_key=a b", o.ID); err != nil {
		t.Fatal(err)
	}
	h.post(1)
	h.run(h.config())
	waitFor(t, 10*time.Second, "two attempts not sent", func() bool { return h.countFails(o.ID, "not sent: the outlet's URL must be a valid URL") >= 2 })
	if calls.Load() != 0 {
		t.Errorf("the receiver got %d requests", calls.Load())
	}
}
