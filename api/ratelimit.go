package api

import (
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/gin-gonic/gin"
	"golang.org/x/time/rate"
)

// limiter keeps one token bucket per principal. A bucket idle long enough
// to have refilled is the same as a new one, so it is dropped; the sweep
// runs at most once per idle period, on the request path.
type limiter struct {
	limit rate.Limit
	burst int
	now   func() time.Time
	idle  time.Duration

	mu        sync.Mutex
	buckets   map[string]*bucket
	lastSweep time.Time
}

type bucket struct {
	lim  *rate.Limiter
	seen time.Time
}

func newLimiter(perSecond float64, burst int, now func() time.Time) *limiter {
	l := &limiter{limit: rate.Limit(perSecond), burst: burst, now: now, buckets: map[string]*bucket{}}
	if math.IsInf(perSecond, 1) {
		l.limit = rate.Inf
	} else {
		// Time for an empty bucket to fill up again, and at least a minute.
		l.idle = max(time.Minute, time.Duration(float64(burst)/perSecond*float64(time.Second)))
	}
	return l
}

// allow takes one token from key's bucket. When none is left it returns
// false and how long until one is.
func (l *limiter) allow(key string) (bool, time.Duration) {
	if l.limit == rate.Inf {
		return true, 0
	}
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	if now.Sub(l.lastSweep) >= l.idle {
		for k, b := range l.buckets {
			if now.Sub(b.seen) >= l.idle {
				delete(l.buckets, k)
			}
		}
		l.lastSweep = now
	}
	b, ok := l.buckets[key]
	if !ok {
		b = &bucket{lim: rate.NewLimiter(l.limit, l.burst)}
		l.buckets[key] = b
	}
	b.seen = now
	r := b.lim.ReserveN(now, 1)
	if !r.OK() {
		// A burst of zero admits nothing, ever.
		return false, l.idle
	}
	if d := r.DelayFrom(now); d > 0 {
		r.CancelAt(now)
		return false, d
	}
	return true, 0
}

// size is the number of buckets kept.
func (l *limiter) size() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.buckets)
}

// rateLimitError is a refusal by a limiter; writeError adds its
// Retry-After header.
type rateLimitError struct {
	what string
	wait time.Duration
}

func (e *rateLimitError) Error() string {
	return fmt.Sprintf("too many %s; retry after %d s", e.what, e.retryAfter())
}

// retryAfter is the wait in whole seconds, at least 1.
func (e *rateLimitError) retryAfter() int { return max(1, int(math.Ceil(e.wait.Seconds()))) }

// rateLimit refuses a request when its principal has used up its requests
// (Config.RateLimit, Config.RateBurst).
func (s *Server) rateLimit(c *gin.Context) {
	p, _ := principalOf(c)
	if ok, wait := s.limiter.allow(p.CompanyID + "/" + p.Actor()); !ok {
		s.writeError(c, &rateLimitError{what: "requests", wait: wait})
		c.Abort()
		return
	}
	c.Next()
}

// Password attempts are limited per company and email, much more strictly
// than requests, so passwords cannot be guessed at speed: a burst of
// loginBurst, then one attempt per loginEvery.
const (
	loginBurst = 10
	loginEvery = 6 * time.Second
)
