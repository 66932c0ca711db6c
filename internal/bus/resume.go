package bus

import (
	"context"
	"errors"
	"math"
	"sync"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ThreeDotsLabs/watermill/message/router/middleware"

	"github.com/clientele/clientele/internal/backoff"
)

// Messages only announce work whose source of truth is elsewhere (the
// event log, the staged import chunks), and the work of one key (a
// projector, a company) must be done in order. A consumer must not retry a
// failing message for ever inside its delivery: watermill-sql hands a
// message out inside a transaction that locks the consumer group's offset,
// and that transaction, held, holds back pg_snapshot_xmin, the safe head of
// every reader of the event log on the server. So an ordered consumer is
// two halves, which Resumer gives both the projection runtime and the
// import worker:
//
//   - a delivery tries its message a few times (TryThenResume), then acks
//     it and hands the message's key to the resume loop; so does the
//     handler itself when the message is not its key's next piece of work
//     (the key is behind): nothing is skipped, the source of truth still
//     has it;
//   - the resume loop (Run) catches each key handed to it up from the
//     source of truth, outside any delivery, with a caller's CatchUp; a
//     key whose CatchUp fails is tried again after a backoff of its own
//     (MinBackoff doubling to MaxBackoff), which neither delays nor
//     blocks the other keys. Keys take turns, one CatchUp at a time each,
//     at most Parallel at once.
//
// The two users differ in how many keys run at once and in how much one
// CatchUp does, and that is all they set: the projection runtime's keys
// are its few projectors, each caught up whole by one CatchUp, all side by
// side (one projector's long catch-up must not hold another's); the
// import worker's keys are companies, any number of them, one chunk per
// CatchUp and one company at a time, beside the delivery at hand, so that
// a company with a long backlog takes turns with the others instead of
// starving them, and a backlog of many companies opens one transaction,
// not many.

// ResumerConfig configures a Resumer. Zero optional fields take the
// defaults documented on each.
type ResumerConfig struct {
	// CatchUp does the next piece of key's work from the source of truth,
	// in order. It returns more when the key has more work to do at once:
	// the key then goes to the back of the line, after the other keys
	// waiting, so that a key with a long backlog takes turns with the
	// others rather than starving them. An error is retried after the
	// key's backoff. Required.
	CatchUp func(ctx context.Context, key string) (more bool, err error)
	// Parallel is how many keys are caught up at once. Default 1.
	Parallel int
	// MinBackoff is the wait after a key's first failed CatchUp; each
	// further failure in a row doubles it, up to MaxBackoff. Defaults 1s
	// and 30s.
	MinBackoff, MaxBackoff time.Duration
	// Attempts is the number of attempts of one delivery before
	// TryThenResume acks it. Default 5.
	Attempts int
	// RetryMaxInterval caps the backoff between the attempts of one
	// delivery. Default 5s.
	RetryMaxInterval time.Duration
	// Logger receives the logs of the retries within a delivery. Default
	// Watermill's no-op logger.
	Logger watermill.LoggerAdapter
	// GaveUp, when set, is called when a delivery acks a message whose
	// attempts all failed, with the last error (to log it).
	GaveUp func(ctx context.Context, key string, err error)
	// Failed, when set, is called when a CatchUp fails, with its error and
	// the wait before the key's next CatchUp (to log and count it).
	Failed func(ctx context.Context, key string, err error, retryIn time.Duration)
}

func (c *ResumerConfig) setDefaults() {
	if c.Parallel == 0 {
		c.Parallel = 1
	}
	if c.MinBackoff == 0 {
		c.MinBackoff = time.Second
	}
	if c.MaxBackoff == 0 {
		c.MaxBackoff = 30 * time.Second
	}
	if c.Attempts == 0 {
		c.Attempts = 5
	}
	if c.RetryMaxInterval == 0 {
		c.RetryMaxInterval = 5 * time.Second
	}
	if c.Logger == nil {
		c.Logger = watermill.NopLogger{}
	}
}

// Validate reports every problem of the configuration at once.
func (c ResumerConfig) Validate() error {
	var errs []error
	if c.CatchUp == nil {
		errs = append(errs, errors.New("bus: ResumerConfig.CatchUp is required"))
	}
	if c.Parallel < 0 || c.Attempts < 0 {
		errs = append(errs, errors.New("bus: ResumerConfig.Parallel or Attempts is negative"))
	}
	if c.MinBackoff < 0 || c.MaxBackoff < 0 || c.RetryMaxInterval < 0 {
		errs = append(errs, errors.New("bus: ResumerConfig.MinBackoff, MaxBackoff or RetryMaxInterval is negative"))
	}
	return errors.Join(errs...)
}

// Resumer is the ordered-consumer mechanism: the deliveries of a Watermill
// handler give up after a few attempts (TryThenResume) and hand their key
// to a resume loop (Run), which catches the key up from the source of
// truth with backoff (see ResumerConfig.CatchUp). Resume may be called
// before Run and from any goroutine.
type Resumer struct {
	cfg ResumerConfig

	mu      sync.Mutex
	keys    map[string]*resumeKey // the keys behind
	line    []string              // the keys due, in turn
	running int                   // CatchUps running
	wake    chan struct{}
}

// resumeKey is the state of a key behind. It is in exactly one of three
// states: in line, running, or waiting out its backoff (timer set).
type resumeKey struct {
	inLine, running bool
	// again: Resume was called while the key's CatchUp ran, so what it
	// found done may not be any more.
	again bool
	// failures is the number of the key's CatchUps that failed in a
	// row, which its backoff doubles with.
	failures int
	backoff  time.Duration
	timer    *time.Timer
}

// NewResumer checks cfg and returns a Resumer. It starts nothing.
func NewResumer(cfg ResumerConfig) (*Resumer, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Resumer{cfg: cfg, keys: map[string]*resumeKey{}, wake: make(chan struct{}, 1)}, nil
}

// Resume hands key to the resume loop: its CatchUp runs in its turn, or
// again after the one running ends. A key waiting out its backoff keeps
// waiting: Resume does not make a failing key fail faster.
func (r *Resumer) Resume(key string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	k := r.keys[key]
	if k == nil {
		k = &resumeKey{}
		r.keys[key] = k
	}
	switch {
	case k.running:
		k.again = true
	case !k.inLine && k.timer == nil:
		r.enqueue(key, k)
	}
}

// enqueue puts key at the end of the line and wakes Run. r.mu is held.
func (r *Resumer) enqueue(key string, k *resumeKey) {
	k.inLine = true
	r.line = append(r.line, key)
	select {
	case r.wake <- struct{}{}:
	default: // already woken
	}
}

// Run is the resume loop: it catches up the keys handed to it, in turn,
// until ctx ends, and returns once their CatchUps have.
func (r *Resumer) Run(ctx context.Context) {
	var wg sync.WaitGroup
	defer func() {
		wg.Wait()
		r.mu.Lock()
		defer r.mu.Unlock()
		for _, k := range r.keys {
			if k.timer != nil && k.timer.Stop() {
				k.timer = nil
			}
		}
	}()
	for {
		r.mu.Lock()
		for r.running < r.cfg.Parallel && len(r.line) > 0 {
			key := r.line[0]
			r.line = r.line[1:]
			k := r.keys[key]
			k.inLine, k.running, k.again = false, true, false
			r.running++
			wg.Add(1)
			go func() {
				defer wg.Done()
				r.catchUp(ctx, key, k)
			}()
		}
		r.mu.Unlock()
		select {
		case <-ctx.Done():
			return
		case <-r.wake:
		}
	}
}

// catchUp runs key's CatchUp once and decides what comes next for key:
// the back of the line (more to do, or handed again meanwhile), its
// backoff (failed), or nothing (done).
func (r *Resumer) catchUp(ctx context.Context, key string, k *resumeKey) {
	more, err := r.cfg.CatchUp(ctx, key)
	if err != nil && ctx.Err() == nil {
		// Only the key's running CatchUp touches its backoff.
		k.failures++
		k.backoff = backoff.Doubling{Min: r.cfg.MinBackoff, Max: r.cfg.MaxBackoff}.After(k.failures)
		if r.cfg.Failed != nil {
			r.cfg.Failed(ctx, key, err, k.backoff)
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.running--
	k.running = false
	if ctx.Err() != nil {
		return
	}
	switch {
	case err != nil:
		k.timer = time.AfterFunc(k.backoff, func() {
			r.mu.Lock()
			defer r.mu.Unlock()
			k.timer = nil
			r.enqueue(key, k)
		})
	case more || k.again:
		k.failures = 0
		r.enqueue(key, k)
	default:
		delete(r.keys, key)
	}
	// A slot is free: wake Run for the next key in line.
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// TryThenResume is the middleware of a handler whose messages belong to a
// key (keyOf says which; false when the message names none): it tries a
// delivery Attempts times, with backoff and jitter (RetryWithBackoff), and
// then acks it and hands its key to the resume loop, which does the work
// from the source of truth. The delivery's transaction thus ends; nothing
// is skipped. A delivery cut short by its context is nacked as usual.
func (r *Resumer) TryThenResume(keyOf func(*message.Message) (string, bool)) message.HandlerMiddleware {
	retry := RetryWithBackoff(r.cfg.Attempts, r.cfg.RetryMaxInterval, r.cfg.Logger)
	return func(h message.HandlerFunc) message.HandlerFunc {
		h = retry.Middleware(h)
		return func(msg *message.Message) ([]*message.Message, error) {
			out, err := h(msg)
			if err == nil || msg.Context().Err() != nil {
				return out, err
			}
			key, ok := keyOf(msg)
			if r.cfg.GaveUp != nil {
				r.cfg.GaveUp(msg.Context(), key, err)
			}
			if ok {
				r.Resume(key)
			}
			return nil, nil
		}
	}
}

// RetryWithBackoff is the policy of a handler that retries a failing
// message within its delivery: attempts attempts in all (at least one),
// the first retry after 100 ms, each later one after twice as long, up to
// maxInterval, with 20% jitter. Then the last error is returned, and the
// handler's caller decides: TryThenResume acks and resumes the key, the
// NATS relay nacks.
func RetryWithBackoff(attempts int, maxInterval time.Duration, logger watermill.LoggerAdapter) middleware.Retry {
	return middleware.Retry{
		MaxRetries:          min(max(attempts-1, 0), math.MaxInt32),
		InitialInterval:     100 * time.Millisecond,
		MaxInterval:         maxInterval,
		Multiplier:          2,
		RandomizationFactor: 0.2,
		Logger:              logger,
	}
}
