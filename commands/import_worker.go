package commands

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ThreeDotsLabs/watermill/message/router/middleware"

	"github.com/clientele/clientele/domain/importing"
	"github.com/clientele/clientele/internal/bus"
	"github.com/clientele/clientele/internal/ingest"
)

// ImportWorkerName names the worker's Watermill handler and its consumer
// group. It is a durable identifier: renaming it would consume every
// chunk message ever published again (harmlessly, since done chunks are
// skipped, but slowly).
const ImportWorkerName = "import_worker"

// ImportWorker applies staged import chunks: a Watermill handler of
// ingest.ChunksTopic that runs ImportChunkHandler for each message.
//
// Every worker of a deployment (serve, clientele import) shares one
// consumer group, whose subscriber takes one message at a time under a
// row lock: chunks are applied one at a time, in publication order, so
// the uploads of a company apply in upload order and an Importer never
// races another over write-side state.
type ImportWorker struct {
	cfg    ImportWorkerConfig
	chunks ImportChunkHandler
	store  *ingest.Store
	wlog   watermill.LoggerAdapter
	life   bus.Lifecycle
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
		store:  ingest.NewStore(cfg.Pool),
		wlog:   bus.Logger(cfg.Logger),
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
		return fmt.Errorf("commands: import worker: %w", err)
	}
	defer end()

	router, err := message.NewRouter(message.RouterConfig{CloseTimeout: 30 * time.Second}, w.wlog)
	if err != nil {
		return fmt.Errorf("commands: import worker: %w", err)
	}
	sub, err := w.cfg.Transport.Subscriber(ImportWorkerName)
	if err != nil {
		return err
	}
	// A few attempts per delivery, then giveUp acks; the chunk is not
	// skipped (see applyUpTo). A chunk that cannot ever succeed says so
	// with a *PermanentError, which fails its run instead.
	retry := bus.RetryForever(w.cfg.RetryMaxInterval, w.wlog)
	retry.MaxRetries = w.cfg.MessageAttempts - 1
	h := router.AddNoPublisherHandler(ImportWorkerName, ingest.ChunksTopic, sub, w.handle)
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
		return fmt.Errorf("commands: import worker: %w", err)
	}
	return nil
}

// A chunk that fails is not retried for ever inside the delivery of its
// message: watermill-sql hands a message out inside a transaction that
// locks the consumer group's offset, and that transaction, held, holds
// back pg_snapshot_xmin and so every reader of the event log on the
// server (every projection). Instead a delivery tries MessageAttempts
// times and gives up (acks); the chunk stays pending and the company's
// later chunks wait for it: each delivery first applies its company's
// pending chunks in upload order, up to its own (applyUpTo), and
// resumeLoop retries the companies whose imports stood still for
// StallAfter. Other companies' imports go on.

func (w *ImportWorker) handle(msg *message.Message) error {
	m, err := ingest.ParseChunkMessage(msg.Payload)
	if err != nil {
		return err
	}
	target := ingest.ChunkRef{RunID: m.RunID, Seq: m.Seq}
	if err := w.applyUpTo(msg.Context(), m.CompanyID, &target); err != nil {
		if msg.Context().Err() == nil {
			w.cfg.Logger.Error("import chunk failed; retrying", "run_id", m.RunID, "seq", m.Seq, "err", err)
		}
		return err
	}
	if w.cfg.AfterChunk != nil {
		w.cfg.AfterChunk(m.RunID, m.Seq)
	}
	return nil
}

// applyUpTo applies the company's pending chunks in upload order, up to
// and including target (every pending one when target is nil), and stops
// at the first that fails, with its error. A target already applied (a
// redelivered message) applies nothing.
func (w *ImportWorker) applyUpTo(ctx context.Context, companyID string, target *ingest.ChunkRef) error {
	if target != nil {
		pending, err := w.store.Pending(ctx, *target)
		if err != nil || !pending {
			return err
		}
	}
	for {
		next, ok, err := w.store.NextPending(ctx, companyID)
		if err != nil || !ok {
			return err
		}
		if err := w.chunks.Handle(ctx, ImportChunk{RunID: next.RunID, Seq: next.Seq}); err != nil {
			return err
		}
		if target != nil && next == *target {
			return nil
		}
	}
}

// giveUp acks a chunk message whose attempts all failed, so that the
// subscriber's transaction ends; the chunk stays pending (see handle).
func (w *ImportWorker) giveUp(h message.HandlerFunc) message.HandlerFunc {
	return func(msg *message.Message) ([]*message.Message, error) {
		out, err := h(msg)
		if err == nil || msg.Context().Err() != nil {
			return out, err
		}
		w.cfg.Logger.Error("an import chunk keeps failing; it stays pending, its company's later chunks wait for it, and it is retried",
			"attempts", w.cfg.MessageAttempts, "err", err)
		return nil, nil
	}
}

// resumeLoop applies, every StallAfter, the pending chunks of the
// companies whose imports stood still that long: the retry of a chunk
// whose deliveries gave up, with or without new uploads.
func (w *ImportWorker) resumeLoop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(w.cfg.StallAfter):
		}
		companies, err := w.store.StalledCompanies(ctx, w.cfg.StallAfter)
		if err != nil && ctx.Err() == nil {
			w.cfg.Logger.Error("look for stalled imports", "err", err)
		}
		for _, id := range companies {
			if err := w.applyUpTo(ctx, id, nil); err != nil && ctx.Err() == nil {
				w.cfg.Logger.Error("a company's import is stopped at a chunk that keeps failing; it is retried", "company_id", id, "err", err)
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
		if n, err := bus.Prune(ctx, w.cfg.Pool, ingest.ChunksTopic, []string{ImportWorkerName}); err != nil && ctx.Err() == nil {
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
