package delivery

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/clientele/clientele/internal/backoff"
)

// backoff is the delay before retrying a batch that failed attempts times
// in a row: MinBackoff doubling up to MaxBackoff, each delay moved at
// random by up to a fifth either way so that outlets failing together do
// not retry together.
func (c Config) backoff(attempts int) time.Duration {
	return backoff.Doubling{Min: c.MinBackoff, Max: c.MaxBackoff, Jitter: 0.2}.After(attempts)
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
