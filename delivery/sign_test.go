package delivery_test

import (
	"crypto/tls"
	"crypto/x509"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/clientele/clientele/delivery"
	"github.com/clientele/clientele/domain/datatarget"
)

// TestSignedOverTLS: an outlet with a secret signs its requests as
// Standard Webhooks says (checked with the reference library), keeps the
// webhook-id of a batch when retrying it, and is logged as readable HTTP
// even over TLS (its header values masked: datatarget.MaskRawHeaders).
func TestSignedOverTLS(t *testing.T) {
	const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var ids []string
	var bodies int
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if err := wh.Verify(body, r.Header); err != nil {
			t.Errorf("signature: %v", err)
		}
		mu.Lock()
		defer mu.Unlock()
		ids = append(ids, r.Header.Get("webhook-id"))
		if len(ids) == 1 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		bodies++
	}))
	t.Cleanup(srv.Close)
	roots := x509.NewCertPool()
	roots.AddCert(srv.Certificate())

	h := newHarness(t)
	o := h.outlet(srv.URL+"/hook", true, func(s *datatarget.OutletSpec) { s.Secret = secret })
	h.post(5)
	h.run(h.config(func(c *delivery.Config) { c.TLSConfig = &tls.Config{RootCAs: roots} }))
	waitFor(t, 10*time.Second, "delivery", func() bool { mu.Lock(); defer mu.Unlock(); return bodies == 1 })

	mu.Lock()
	defer mu.Unlock()
	if len(ids) != 2 || ids[0] != ids[1] || !strings.HasPrefix(ids[0], "msg_"+o.ID+"_1_5") {
		t.Errorf("webhook ids %v", ids)
	}
	for _, e := range h.entries(o.ID) {
		// Stored with the signature and the outlet's header values masked.
		if !strings.HasPrefix(e.HTTPRequest, "POST /hook HTTP/1.1\r\n") || !strings.Contains(e.HTTPRequest, "\r\nwebhook-signature: ****\r\n") ||
			!strings.Contains(e.HTTPRequest, "\r\nX-Api-Key: ****\r\n") || !strings.Contains(e.HTTPRequest, "\r\nwebhook-id: msg_") {
			t.Errorf("raw request over TLS:\n%s", e.HTTPRequest)
		}
	}
}
