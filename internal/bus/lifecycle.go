package bus

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"

	"github.com/ThreeDotsLabs/watermill/message"
)

// ErrStarted reports a second Run of a component that runs once.
var ErrStarted = errors.New("bus: already started or closed")

// Lifecycle is the start-once, close-once life of a long-running consumer
// (the projection runtime, the import worker): Begin starts it, Close
// cancels it and waits for the run to end, Running tells a readiness probe
// whether it consumes. The zero value is ready to use.
type Lifecycle struct {
	running atomic.Bool

	mu      sync.Mutex
	started bool
	closed  bool
	stop    context.CancelFunc
	done    chan struct{}
}

// Begin starts the run: it returns the run's context, cancelled by Close,
// and end, which the run must defer. It fails with ErrStarted when the
// lifecycle was started or closed before.
func (l *Lifecycle) Begin(ctx context.Context) (runCtx context.Context, end func(), err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.started || l.closed {
		return nil, nil, ErrStarted
	}
	l.started = true
	runCtx, cancel := context.WithCancel(ctx)
	l.stop, l.done = cancel, make(chan struct{})
	return runCtx, func() {
		l.running.Store(false)
		cancel()
		close(l.done)
	}, nil
}

// SetRunning records whether the run consumes.
func (l *Lifecycle) SetRunning(v bool) { l.running.Store(v) }

// Running reports whether the run consumes.
func (l *Lifecycle) Running() bool { return l.running.Load() }

// Close cancels the run, if any, and waits for it to end. Begin fails
// after Close.
func (l *Lifecycle) Close() error {
	l.mu.Lock()
	l.closed = true
	stop, done := l.stop, l.done
	l.mu.Unlock()
	if stop != nil {
		stop()
		<-done
	}
	return nil
}

// RunRouter runs router until ctx is cancelled, marking l running while
// the router runs. A router that stops by itself is an error, returned as
// soon as it stops: a consumer must not quietly stop consuming. A
// database that goes away does not stop it: the subscribers of Postgres
// wait for it (see Postgres.Subscriber), and so do the handlers that
// retry.
func RunRouter(ctx context.Context, l *Lifecycle, router *message.Router) error {
	stopped := make(chan struct{})
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Add(1)
	go func() {
		defer wg.Done()
		select {
		case <-router.Running():
			l.SetRunning(ctx.Err() == nil)
		case <-stopped: // it failed to start
		case <-ctx.Done():
		}
	}()
	err := router.Run(ctx)
	close(stopped)
	if err != nil && ctx.Err() == nil {
		return err
	}
	if ctx.Err() == nil {
		return errors.New("bus: every handler stopped")
	}
	return nil
}
