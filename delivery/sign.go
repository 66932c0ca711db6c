package delivery

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"strconv"
	"time"
)

// Standard Webhooks headers (https://www.standardwebhooks.com/).
const (
	headerWebhookID        = "webhook-id"
	headerWebhookTimestamp = "webhook-timestamp"
	headerWebhookSignature = "webhook-signature"
)

// sign sets the Standard Webhooks headers of a request: its id, the time
// of the attempt, and "v1,<base64 HMAC-SHA256 of id.timestamp.body>" with
// key. The id stays the same when a batch is retried, so a receiver can
// drop a batch it has already processed; the timestamp and signature are
// made for each attempt.
func sign(h http.Header, key []byte, id string, at time.Time, body []byte) {
	ts := strconv.FormatInt(at.Unix(), 10)
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(id))
	mac.Write([]byte{'.'})
	mac.Write([]byte(ts))
	mac.Write([]byte{'.'})
	mac.Write(body)
	h[headerWebhookID] = []string{id}
	h[headerWebhookTimestamp] = []string{ts}
	h[headerWebhookSignature] = []string{"v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))}
}
