package imports

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ThreeDotsLabs/watermill/message/router/middleware"

	"github.com/clientele/clientele/domain/importing"
	"github.com/clientele/clientele/internal/bus"
	"github.com/clientele/clientele/internal/pg"
)

// ImportWorkerName names the worker's Watermill handler and its consumer
// group. It is a durable identifier: renaming it would consume every
// chunk message ever published again (harmlessly, since done chunks are
// skipped, but slowly).
const ImportWorkerName = "import_worker"

// ImportWorker applies staged import chunks: a Watermill handler of
// ChunksTopic that runs ImportChunkHandler for each message.
//
// Every worker of a deployment (serve, clientele import) shares one
// consumer group, whose subscriber takes one message at a time under a
// row lock: chunks are applied one at a time, in publication order, so
// the uploads of a company apply in upload order and an Importer never
// races another over write-side state.
type ImportWorker struct {
	cfg    ImportWorkerConfig
	chunks ImportChunkHandler
	store  *Store
	wlog   watermill.LoggerAdapter
	life   bus.Lifecycle

	// The companies whose pending chunks resumeLoop is to apply, and its
	// wake-up.
	mu     sync.Mutex
	behind map[string]bool
	wake   chan struct{}
}

// NewImportWorker checks cfg and returns a worker. It starts nothing.
func NewImportWorker(cfg ImportWorkerConfig) (*ImportWorker, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	w := &ImportWorker{
		cfg:    cfg,
		chunks: NewImportChunkHandler(cfg.Pool, cfg.Importers, cfg.Companies),
		store:  NewStore(cfg.Pool),
		wlog:   bus.Logger(cfg.Logger),
		behind: map[string]bool{},
		wake:   make(chan struct{}, 1),
	}
	w.chunks.log = cfg.Logger
	if cfg.Registerer != nil {
		if err := w.chunks.metrics.register(cfg.Registerer); err != nil {
			return nil, err
		}
	}
	if w.cfg.Transport == nil {
		// One message per subscriber transaction: watermill-sql holds that
		// transaction (and a lock on the group's offset) while the handler
		// runs, which holds back every reader of the log; one chunk at a
		// time keeps it short.
		t, err := bus.NewPostgres(cfg.Pool, bus.PostgresConfig{PollInterval: cfg.PollInterval, BatchSize: 1, Logger: cfg.Logger})
		if err != nil {
			return nil, err
		}
		w.cfg.Transport = t
	}
	return w, nil
}

// Importers returns the entities the worker can import.
func (w *ImportWorker) Importers() map[importing.Entity]Importer { return w.cfg.Importers }

// Running reports whether the worker is consuming (for a readiness probe).
func (w *ImportWorker) Running() bool { return w.life.Running() }

// Run cleans up abandoned uploads and applies chunks until ctx is
// cancelled or Close is called, then returns nil. It may be called once.
func (w *ImportWorker) Run(ctx context.Context) error {
	ctx, end, err := w.life.Begin(ctx)
	if err != nil {
		return fmt.Errorf("imports: import worker: %w", err)
	}
	defer end()

	router, err := message.NewRouter(message.RouterConfig{CloseTimeout: 30 * time.Second}, w.wlog)
	if err != nil {
		return fmt.Errorf("imports: import worker: %w", err)
	}
	sub, err := w.cfg.Transport.Subscriber(ImportWorkerName)
	if err != nil {
		return err
	}
	// A few attempts per delivery, then giveUp acks; the chunk is not
	// skipped (see handle). A chunk that cannot ever succeed says so
	// with a *PermanentError, which fails its run instead.
	retry := bus.RetryForever(w.cfg.RetryMaxInterval, w.wlog)
	retry.MaxRetries = w.cfg.MessageAttempts - 1
	h := router.AddNoPublisherHandler(ImportWorkerName, ChunksTopic, sub, w.handle)
	h.AddMiddleware(w.giveUp, retry.Middleware, middleware.Recoverer)

	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Add(2)
	go func() {
		defer wg.Done()
		w.cleanUpLoop(ctx)
	}()
	go func() {
		defer wg.Done()
		w.resumeLoop(ctx)
	}()
	if err := bus.RunRouter(ctx, &w.life, router); err != nil {
		return fmt.Errorf("imports: import worker: %w", err)
	}
	return nil
}

// A chunk that fails is not retried for ever inside the delivery of its
// message: watermill-sql hands a message out inside a transaction that
// locks the consumer group's offset, and that transaction, held, holds
// back pg_snapshot_xmin and so every reader of the event log on the
// server (every projection). Instead a delivery tries MessageAttempts
// times and gives up (acks); the chunk stays pending, and the company's
// later chunks wait for it: a delivery whose chunk is not its company's
// next pending one acks at once and hands the company to resumeLoop,
// which applies the company's chunks in upload order outside any
// delivery, retrying a failing one with backoff. resumeLoop also takes the
// companies whose imports stood still for StallAfter. Other companies'
// imports go on.

func (w *ImportWorker) handle(msg *message.Message) error {
	m, err := ParseChunkMessage(msg.Payload)
	if err != nil {
		return err
	}
	ctx := msg.Context()
	target := ImportChunk{RunID: m.RunID, Seq: m.Seq}
	pending, err := w.store.Pending(ctx, target)
	if err != nil || !pending {
		return err // done already: a redelivery, or applied by resumeLoop
	}
	if next, ok, err := w.store.NextPending(ctx, m.CompanyID); err != nil {
		return err
	} else if ok && next != target {
		w.resume(m.CompanyID)
		return nil
	}
	if err := w.chunks.Handle(ctx, ImportChunk{RunID: m.RunID, Seq: m.Seq}); err != nil {
		if ctx.Err() == nil {
			w.cfg.Logger.Log(ctx, pg.Level(err), "import chunk failed; retrying", "run_id", m.RunID, "seq", m.Seq,
				"database_unavailable", pg.Transient(err), "err", err)
		}
		return err
	}
	if w.cfg.AfterChunk != nil {
		w.cfg.AfterChunk(m.RunID, m.Seq)
	}
	return nil
}

// resume hands a company to resumeLoop.
func (w *ImportWorker) resume(companyID string) {
	w.mu.Lock()
	w.behind[companyID] = true
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// giveUp acks a chunk message whose attempts all failed, so that the
// subscriber's transaction ends; the chunk stays pending, and resumeLoop
// retries it (see handle).
func (w *ImportWorker) giveUp(h message.HandlerFunc) message.HandlerFunc {
	return func(msg *message.Message) ([]*message.Message, error) {
		out, err := h(msg)
		if err == nil || msg.Context().Err() != nil {
			return out, err
		}
		w.cfg.Logger.Log(msg.Context(), pg.Level(err), "an import chunk keeps failing; it stays pending, its company's later chunks wait for it, and it is retried",
			"attempts", w.cfg.MessageAttempts, "database_unavailable", pg.Transient(err), "err", err)
		if m, perr := ParseChunkMessage(msg.Payload); perr == nil {
			w.resume(m.CompanyID)
		}
		return nil, nil
	}
}

// resumeLoop applies the pending chunks of the companies handed to it
// (resume) and of those whose imports stood still for StallAfter, in each
// company's upload order, one chunk per company in turn so that no
// company waits for another's whole backlog. A company whose chunk fails
// is retried after a backoff (1 s doubling to StallAfter).
func (w *ImportWorker) resumeLoop(ctx context.Context) {
	tick := time.NewTicker(w.cfg.StallAfter)
	defer tick.Stop()
	backoff := map[string]time.Duration{}
	retryAt := map[string]time.Time{}
	for {
		select {
		case <-ctx.Done():
			return
		case <-w.wake:
		case <-tick.C:
			stalled, err := w.store.StoodStill(ctx, w.cfg.StallAfter)
			if err != nil && ctx.Err() == nil {
				w.cfg.Logger.Error("look for stalled imports", "err", err)
			}
			if err == nil {
				w.chunks.metrics.stalled.Set(float64(len(stalled)))
			}
			for _, s := range stalled {
				w.resume(s.CompanyID)
			}
		}
		for progressed := true; progressed && ctx.Err() == nil; {
			progressed = false
			w.mu.Lock()
			companies := slices.Sorted(maps.Keys(w.behind))
			w.mu.Unlock()
			for _, id := range companies {
				if time.Now().Before(retryAt[id]) {
					continue
				}
				next, ok, err := w.store.NextPending(ctx, id)
				if err == nil && !ok {
					w.mu.Lock()
					delete(w.behind, id)
					w.mu.Unlock()
					delete(backoff, id)
					delete(retryAt, id)
					continue
				}
				if err == nil {
					err = w.chunks.Handle(ctx, next)
				}
				if paused := (*isolationPaused)(nil); errors.As(err, &paused) {
					// The chunk's search for the records the store refuses
					// moved on and stopped at its budget: go on at once (in
					// turn with the other companies), not after a backoff
					// meant for failures that may pass.
					progressed = true
					continue
				}
				if err != nil {
					if ctx.Err() == nil {
						backoff[id] = min(max(2*backoff[id], time.Second), w.cfg.StallAfter)
						retryAt[id] = time.Now().Add(backoff[id])
						w.cfg.Logger.Log(ctx, pg.Level(err), "a company's import is stopped at a chunk that keeps failing; it is retried",
							"company_id", id, "database_unavailable", pg.Transient(err), "err", err)
					}
					continue
				}
				delete(backoff, id)
				delete(retryAt, id)
				progressed = true
			}
		}
	}
}

// cleanUpLoop deletes abandoned uploads and acked chunk messages at start
// and then now and then.
func (w *ImportWorker) cleanUpLoop(ctx context.Context) {
	for {
		n, err := w.store.CleanUp(ctx, w.cfg.Now().Add(-w.cfg.AbandonAfter))
		switch {
		case err != nil && ctx.Err() == nil:
			w.cfg.Logger.Error("clean up abandoned uploads", "err", err)
		case n > 0:
			w.cfg.Logger.Info("deleted abandoned uploads", "runs", n)
		}
		// The chunk messages the worker has acked are of no more use.
		if n, err := bus.Prune(ctx, w.cfg.Pool, ChunksTopic, []string{ImportWorkerName}); err != nil && ctx.Err() == nil {
			w.cfg.Logger.Error("prune the chunk messages", "err", err)
		} else if n > 0 {
			w.cfg.Logger.Debug("pruned chunk messages", "messages", n)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(w.cfg.CleanUpInterval):
		}
	}
}

// Close stops Run and waits for it to return.
func (w *ImportWorker) Close() error { return w.life.Close() }
