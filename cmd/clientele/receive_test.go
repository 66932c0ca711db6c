package main

import (
	"context"
	"net"
	"net/http"
	"strings"
	"testing"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/clientele/clientele/internal/testlog"
)

// TestReceiveRefusesBadSignatures: the receiver says a request is signed
// only when the reference library verifies it, and stops when its context
// ends.
func TestReceiveRefusesBadSignatures(t *testing.T) {
	wh, err := standardwebhooks.NewWebhook("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	out := &testlog.Buffer{}
	stopped := make(chan error, 1)
	go func() { stopped <- serveReceiver(ctx, ln, wh, out) }()
	req, _ := http.NewRequest(http.MethodPost, "http://"+ln.Addr().String()+"/hook", strings.NewReader(`{"a": 1}`))
	req.Header.Set("webhook-id", "msg_1")
	req.Header.Set("webhook-timestamp", "1700000000")
	req.Header.Set("webhook-signature", "v1,bm90IGEgc2lnbmF0dXJl")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusNoContent {
		t.Errorf("status %d, want 204", res.StatusCode)
	}
	cancel()
	if err := <-stopped; err != nil {
		t.Errorf("receiver: %v", err)
	}
	if got := out.String(); !strings.Contains(got, "POST /hook webhook-id=msg_1 signature INVALID") || !strings.Contains(got, `{"a":1}`) {
		t.Errorf("printed:\n%s", got)
	}
}
