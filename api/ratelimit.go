package api

import (
	"context"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/gin-gonic/gin"
	"golang.org/x/time/rate"
)

// limiter keeps one token bucket per key. A bucket idle long enough to
// have refilled is the same as a new one, so it is dropped; the sweep runs
// at most once per idle period, on the request path.
type limiter struct {
	limit rate.Limit
	burst int
	now   func() time.Time
	idle  time.Duration
	// maxKeys bounds the table when its keys come from unauthenticated
	// requests (any email, any address); 0 is unbounded. When it is full,
	// a new key is refused until the sweep frees room: evicting live
	// buckets instead would let whoever fills the table reset the count
	// of the account they are guessing. Tokens given back do not hold
	// room (giveBack).
	maxKeys int

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
	ok, wait, _ := l.take(key)
	return ok, wait
}

// take is allow that also returns a function giving the token back, for
// an attempt that turned out not to count (limiter.giveBack).
func (l *limiter) take(key string) (ok bool, wait time.Duration, giveBack func()) {
	if l.limit == rate.Inf {
		return true, 0, func() {}
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
		if l.maxKeys > 0 && len(l.buckets) >= l.maxKeys {
			return false, l.idle - now.Sub(l.lastSweep), nil
		}
		b = &bucket{lim: rate.NewLimiter(l.limit, l.burst)}
		l.buckets[key] = b
	}
	b.seen = now
	if l.burst == 0 {
		// A burst of zero admits nothing, ever.
		return false, l.idle, nil
	}
	// Only reservations that act at once are made: a reservation for
	// later, even cancelled, would keep a give-back from restoring its
	// token.
	if tokens := b.lim.TokensAt(now); tokens < 1 {
		return false, time.Duration((1 - tokens) / float64(l.limit) * float64(time.Second)), nil
	}
	r := b.lim.ReserveN(now, 1)
	return true, 0, func() { l.giveBack(key, b, r, now) }
}

// giveBack returns the token of reservation r, made at taken from key's
// bucket b. A bucket that is full again is the same as a new one and is
// dropped at once: otherwise attempts that do not count (all given back)
// would fill a bounded table (maxKeys), and refuse every new key, as
// surely as attempts that do. So only buckets short of a token stay: for
// the log-in limiters, failed log-ins and attempts still in progress.
func (l *limiter) giveBack(key string, b *bucket, r *rate.Reservation, taken time.Time) {
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	// Cancelled as of the moment it was made, the reservation gives its
	// token back whatever was taken since; cancelled as of a later moment
	// it would give nothing back.
	r.CancelAt(taken)
	// The bucket may have been swept, and key given a new one, since; that
	// one is not this give-back's to drop.
	if l.buckets[key] == b && b.lim.TokensAt(now) >= float64(l.burst) {
		delete(l.buckets, key)
	}
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
	if err := s.AllowRequest(p); err != nil {
		s.writeError(c, err)
		c.Abort()
		return
	}
	c.Next()
}

// Failed log-ins are limited much more strictly than requests, so that
// passwords cannot be guessed at speed: per company and email (EmailKey),
// a burst of loginBurst, then one per loginEvery; per client address
// (addressKey), which may try many emails, a burst of addrBurst, then one
// per addrEvery. Each table holds at most loginKeys keys (some 250 bytes
// each).
const (
	loginBurst = 10
	loginEvery = 6 * time.Second
	addrBurst  = 30
	addrEvery  = 2 * time.Second
	loginKeys  = 50_000
)

func newLoginLimiter(burst int, every time.Duration, now func() time.Time) *limiter {
	l := newLimiter(float64(time.Second)/float64(every), burst, now)
	l.maxKeys = loginKeys
	return l
}

// gate bounds how many password checks run at once, and so the memory
// they hold (argon2id allocates its whole cost, 64 MiB by default, for
// each). A request that finds no free slot within wait is refused with
// 429: waiting longer would only pile requests up behind the checks.
type gate struct {
	slots chan struct{}
	wait  time.Duration
}

func newGate(slots int, wait time.Duration) *gate {
	return &gate{slots: make(chan struct{}, slots), wait: wait}
}

// enter takes a slot, waiting at most g.wait, and returns the function
// that frees it. It fails with a rateLimitError when no slot frees in
// time, and with ctx's error when the client gives up first.
func (g *gate) enter(ctx context.Context) (leave func(), err error) {
	leave = func() { <-g.slots }
	select {
	case g.slots <- struct{}{}:
		return leave, nil
	default:
	}
	t := time.NewTimer(g.wait)
	defer t.Stop()
	select {
	case g.slots <- struct{}{}:
		return leave, nil
	case <-t.C:
		return nil, &rateLimitError{what: "log-ins in progress", wait: g.wait}
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}
