package delivery

import (
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// backoff is the delay before retrying a batch that failed attempts times
// in a row: MinBackoff doubling up to MaxBackoff, each delay moved at
// random by up to a fifth either way so that outlets failing together do
// not retry together.
func (c Config) backoff(attempts int) time.Duration {
	d := c.MinBackoff
	for i := 1; i < attempts && d < c.MaxBackoff; i++ {
		d *= 2
	}
	d = min(d, c.MaxBackoff)
	jitter := time.Duration((rand.Float64()*0.4 - 0.2) * float64(d))
	return min(d+jitter, c.MaxBackoff)
}

// retryAfter reads a Retry-After header: seconds, or an HTTP date. ok is
// false when there is none or it cannot be read.
func retryAfter(h http.Header, now time.Time) (time.Duration, bool) {
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0, false
	}
	if s, err := strconv.ParseInt(v, 10, 64); err == nil {
		if s < 0 {
			return 0, false
		}
		return time.Duration(min(s, int64(365*24*time.Hour/time.Second))) * time.Second, true
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	return max(t.Sub(now), 0), true
}
