package imports

import (
	"context"
	"errors"
	"fmt"
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

	// resumes applies the pending chunks of the companies handed to it,
	// keyed by company id (see handle).
	resumes *bus.Resumer
}

// NewImportWorker checks cfg and returns a worker. It starts nothing.
func NewImportWorker(cfg ImportWorkerConfig) (*ImportWorker, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	w := &ImportWorker{
		cfg:    cfg,
		chunks: NewImportChunkHandler(cfg.Pool, cfg.Keys, cfg.Importers, cfg.Companies),
		store:  NewStore(cfg.Pool, cfg.Keys),
		wlog:   bus.Logger(cfg.Logger),
	}
	if cfg.Transactions != nil {
		w.chunks.tx = cfg.Transactions
	}
	resumes, err := bus.NewResumer(bus.ResumerConfig{
		CatchUp: w.applyNext,
		// One company at a time, in turn: the resume loop works beside
		// the delivery at hand, and a backlog of many companies must not
		// make many transactions at once.
		Parallel:         1,
		MinBackoff:       time.Second,
		MaxBackoff:       cfg.StallAfter,
		Attempts:         cfg.MessageAttempts,
		RetryMaxInterval: cfg.RetryMaxInterval,
		Logger:           w.wlog,
		GaveUp: func(ctx context.Context, companyID string, err error) {
			w.cfg.Logger.Log(ctx, pg.Level(err), "an import chunk keeps failing; it stays pending, its company's later chunks wait for it, and it is retried",
				"company_id", companyID, "attempts", w.cfg.MessageAttempts, "database_unavailable", pg.Transient(err), "err", err)
		},
		Failed: func(ctx context.Context, companyID string, err error, retryIn time.Duration) {
			w.cfg.Logger.Log(ctx, pg.Level(err), "a company's import is stopped at a chunk that keeps failing; it is retried",
				"company_id", companyID, "database_unavailable", pg.Transient(err), "retry_in", retryIn, "err", err)
		},
	})
	if err != nil {
		return nil, err
	}
	w.resumes = resumes
	w.chunks.log = cfg.Logger
	if cfg.Registerer != nil {
		if err := w.chunks.metrics.register(cfg.Registerer); err != nil {
			return nil, fmt.Errorf("imports: register import metrics: %w", err)
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
	// A few attempts per delivery, then the message is acked and the
	// resume loop applies the company's chunks (see handle). A chunk that
	// cannot ever succeed says so with a *PermanentError, which fails its
	// run instead.
	h := router.AddNoPublisherHandler(ImportWorkerName, ChunksTopic, sub, w.handle)
	h.AddMiddleware(w.resumes.TryThenResume(chunkCompany), middleware.Recoverer)

	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Add(3)
	go func() {
		defer wg.Done()
		w.cleanUpLoop(ctx)
	}()
	go func() {
		defer wg.Done()
		w.resumes.Run(ctx)
	}()
	go func() {
		defer wg.Done()
		w.resumeStalled(ctx)
	}()
	if err := bus.RunRouter(ctx, &w.life, router); err != nil {
		return fmt.Errorf("imports: import worker: %w", err)
	}
	return nil
}

// A chunk that fails is not retried for ever inside the delivery of its
// message (bus.Resumer says why). The worker is a bus.Resumer keyed by
// company: a delivery tries MessageAttempts times and gives up (acks);
// the chunk stays pending, and the company's later chunks wait for it: a
// delivery whose chunk is not its company's next pending one acks at once
// and hands the company to the resume loop, which applies the company's
// chunks in upload order outside any delivery (applyNext), one chunk per
// company in turn, retrying a failing one with backoff (1 s doubling to
// StallAfter). The resume loop also takes the companies whose imports
// stood still for StallAfter (resumeStalled). Other companies' imports go
// on.

func (w *ImportWorker) handle(msg *message.Message) error {
	m, err := ParseChunkMessage(msg.Payload)
	if err != nil {
		return err
	}
	ctx := msg.Context()
	target := ImportChunk{RunID: m.RunID, Seq: m.Seq}
	pending, err := w.store.Pending(ctx, target)
	if err != nil || !pending {
		return err // done already: a redelivery, or applied by the resume loop
	}
	if next, ok, err := w.store.NextPending(ctx, m.CompanyID); err != nil {
		return err
	} else if ok && next != target {
		w.resumes.Resume(m.CompanyID)
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

// chunkCompany is the key of a chunk message: its company.
func chunkCompany(msg *message.Message) (string, bool) {
	m, err := ParseChunkMessage(msg.Payload)
	return m.CompanyID, err == nil
}

// applyNext applies the next pending chunk of a company handed to the
// resume loop, in the company's upload order, and says whether the company
// may have more. Each call applies one chunk at most, so that the
// companies take turns: none waits for another's whole backlog.
func (w *ImportWorker) applyNext(ctx context.Context, companyID string) (more bool, err error) {
	next, ok, err := w.store.NextPending(ctx, companyID)
	if err != nil || !ok {
		return false, err
	}
	err = w.chunks.Handle(ctx, next)
	if paused := (*isolationPaused)(nil); errors.As(err, &paused) {
		// The chunk's search for the records the store refuses moved on
		// and stopped at its budget: go on at once (in turn with the other
		// companies), not after a backoff meant for failures that may
		// pass.
		return true, nil
	}
	return err == nil, err
}

// resumeStalled hands to the resume loop, every StallAfter, the companies
// whose imports stood still for StallAfter (a lost message, or a delivery
// held behind another company's long upload), and refreshes the gauge of
// them.
func (w *ImportWorker) resumeStalled(ctx context.Context) {
	tick := time.NewTicker(w.cfg.StallAfter)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		stalled, err := w.store.StoodStill(ctx, w.cfg.StallAfter)
		if err != nil {
			if ctx.Err() == nil {
				w.cfg.Logger.Error("look for stalled imports", "err", err)
			}
			continue
		}
		w.chunks.metrics.stalled.Set(float64(len(stalled)))
		for _, s := range stalled {
			w.resumes.Resume(s.CompanyID)
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
