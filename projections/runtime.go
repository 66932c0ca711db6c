package projections

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ThreeDotsLabs/watermill/message/router/middleware"
	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/clientele/clientele/eventstore"
	"github.com/clientele/clientele/internal/bus"
)

// Runtime runs the projectors: inline ones through InlineHook, async ones
// as Watermill handlers of bus.CommitsTopic (Run). Every store that
// appends must carry both hooks, or async projectors miss its commits:
//
//	rt, err := projections.NewRuntime(cfg)
//	store.AddHook(rt.InlineHook())
//	store.AddHook(projections.CommitPublisher{})
//	go rt.Run(ctx)
type Runtime struct {
	cfg       RuntimeConfig
	transport bus.Transport
	wlog      watermill.LoggerAdapter
	metrics   *metrics
	life      bus.Lifecycle
	// catchUps is the catch-up loop of the async projectors, keyed by
	// name (catchup.go).
	catchUps *bus.Resumer
	async    map[string]Projector
	// leftBehind holds the names of the projectors that left an announced
	// commit to their catch-up (handler.go, apply): the catch-up may stop
	// short of it, before an earlier commit that the log shows and the
	// store does not yet give to readers (an EventStoreDB commit not
	// decided yet), so the next commit applied from its announcement
	// resumes the catch-up again.
	leftBehind sync.Map
}

// NewRuntime checks cfg and returns a runtime. It does not start anything.
func NewRuntime(cfg RuntimeConfig) (*Runtime, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	r := &Runtime{cfg: cfg, transport: cfg.Transport, wlog: bus.Logger(cfg.Logger), async: map[string]Projector{}}
	for _, p := range cfg.Async {
		r.async[p.Name()] = p
	}
	catchUps, err := r.newCatchUps()
	if err != nil {
		return nil, err
	}
	r.catchUps = catchUps
	if r.transport == nil {
		t, err := bus.NewPostgres(cfg.Pool, bus.PostgresConfig{PollInterval: cfg.PollInterval, Wake: cfg.Wake, Logger: cfg.Logger})
		if err != nil {
			return nil, err
		}
		r.transport = t
	}
	var names []string
	for _, p := range append(append([]Projector(nil), cfg.Inline...), cfg.Async...) {
		names = append(names, p.Name())
	}
	r.metrics = newMetrics(names)
	if cfg.Registerer != nil {
		if err := r.Register(cfg.Registerer); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// Register registers the runtime's metrics on reg.
func (r *Runtime) Register(reg prometheus.Registerer) error { return r.metrics.register(reg) }

// InlineHook is the event store hook that applies every inline projector to
// each commit inside its append transaction; an error aborts the append.
// Inline projectors keep no checkpoint: they are exactly as current as the
// log, and writing a checkpoint row in every append would serialise all
// appends on that row's lock.
func (r *Runtime) InlineHook() eventstore.TxHook {
	return eventstore.TxHookFunc(func(ctx context.Context, tx pgx.Tx, c eventstore.Committed) error {
		for _, p := range r.cfg.Inline {
			if err := p.Apply(ctx, tx, c.Events); err != nil {
				return fmt.Errorf("projections: %s: %w", p.Name(), err)
			}
			r.metrics.applied.WithLabelValues(p.Name()).Add(float64(len(c.Events)))
		}
		return nil
	})
}

// Running reports whether the async projectors are consuming (for a
// readiness probe).
func (r *Runtime) Running() bool { return r.life.Running() }

// Run consumes commits for the async projectors until ctx is cancelled or
// Close is called, then returns nil; it returns an error if the projectors
// cannot start or stop on their own. It may be called once.
func (r *Runtime) Run(ctx context.Context) error {
	ctx, end, err := r.life.Begin(ctx)
	if err != nil {
		return fmt.Errorf("projections: runtime: %w", err)
	}
	defer end()

	for _, p := range r.cfg.Async {
		if err := ensureCheckpoint(ctx, r.cfg.Pool, p.Name()); err != nil {
			if ctx.Err() != nil {
				return nil // stopped while starting: not a failure
			}
			return err
		}
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Add(2)
	go func() {
		defer wg.Done()
		r.watchLag(ctx)
	}()
	go func() {
		defer wg.Done()
		r.pruneLoop(ctx)
	}()
	wg.Add(1)
	go func() {
		defer wg.Done()
		r.catchUps.Run(ctx)
	}()

	if len(r.cfg.Async) == 0 {
		r.life.SetRunning(true)
		<-ctx.Done()
		return nil
	}
	router, err := r.router()
	if err != nil {
		return err
	}
	if err := bus.RunRouter(ctx, &r.life, router); err != nil {
		return fmt.Errorf("projections: %w", err)
	}
	return nil
}

// router builds the Watermill router: one handler per async projector, its
// name and consumer group the projector's name.
func (r *Runtime) router() (*message.Router, error) {
	router, err := message.NewRouter(message.RouterConfig{CloseTimeout: 30 * time.Second}, r.wlog)
	if err != nil {
		return nil, fmt.Errorf("projections: %w", err)
	}
	for _, p := range r.cfg.Async {
		sub, err := r.transport.Subscriber(p.Name())
		if err != nil {
			return nil, err
		}
		h := router.AddNoPublisherHandler(p.Name(), bus.CommitsTopic, sub, r.handler(p))
		// A few attempts per delivery, then the message is acked and the
		// catch-up loop applies the commit from the log (catchup.go). The
		// error counter sees every failed attempt, panics included, since
		// Recoverer turns them into errors.
		name := p.Name()
		keyOf := func(*message.Message) (string, bool) { return name, true }
		h.AddMiddleware(r.catchUps.TryThenResume(keyOf), r.countErrors(name), middleware.Recoverer)
	}
	return router, nil
}

func (r *Runtime) countErrors(name string) message.HandlerMiddleware {
	errs := r.metrics.errors.WithLabelValues(name)
	return func(h message.HandlerFunc) message.HandlerFunc {
		return func(msg *message.Message) ([]*message.Message, error) {
			out, err := h(msg)
			if err != nil && msg.Context().Err() == nil {
				errs.Inc()
			}
			return out, err
		}
	}
}

// pruneLoop deletes, every PruneInterval, the commit messages every async
// projector of the runtime has acked: the outbox only announces commits,
// and the log keeps them.
func (r *Runtime) pruneLoop(ctx context.Context) {
	var groups []string
	for _, p := range r.cfg.Async {
		groups = append(groups, p.Name())
	}
	if len(groups) == 0 {
		return
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(r.cfg.PruneInterval):
		}
		if n, err := bus.Prune(ctx, r.cfg.Pool, bus.CommitsTopic, groups); err != nil && ctx.Err() == nil {
			r.cfg.Logger.Error("projections: prune the commit messages", "err", err)
		} else if n > 0 {
			r.cfg.Logger.Debug("projections: pruned commit messages", "messages", n)
		}
	}
}

// Close stops Run and waits for it to return.
func (r *Runtime) Close() error { return r.life.Close() }
