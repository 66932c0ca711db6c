package imports

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/clientele/clientele/domain"
	"github.com/clientele/clientele/domain/company"
	"github.com/clientele/clientele/domain/importing"
	"github.com/clientele/clientele/eventstore"
	"github.com/clientele/clientele/internal/crypto"
	"github.com/clientele/clientele/internal/pg"
)

// ImportChunk applies one staged chunk of an import run: the command
// carried by each message of ChunksTopic.
type ImportChunk struct {
	RunID string
	Seq   int
}

// CompanyFinder finds a company by id; readmodels.Companies implements it.
type CompanyFinder interface {
	ByID(ctx context.Context, id string) (company.Company, error)
}

// PermanentError marks an Importer error that retrying cannot cure: the
// chunk can never be imported. The run then fails with the error's
// message as its reason (so the message must not quote record values),
// instead of being retried for ever.
type PermanentError struct{ Err error }

func (e *PermanentError) Error() string { return e.Err.Error() }
func (e *PermanentError) Unwrap() error { return e.Err }

// Permanent wraps err in a *PermanentError.
func Permanent(err error) error { return &PermanentError{Err: err} }

// ImportChunkHandler handles ImportChunk.
type ImportChunkHandler struct {
	pool *pgxpool.Pool
	// tx runs each chunk's transaction: the Importers' event store's
	// (ImportWorkerConfig.Transactions), or plain ones on pool.
	tx        Transactor
	store     *Store
	importers map[importing.Entity]Importer
	companies CompanyFinder
	ahead     *ahead
	// log and metrics report the chunks that fail and the records
	// rejected because the store refused them; the worker sets its own.
	log     *slog.Logger
	metrics *importMetrics
}

// NewImportChunkHandler returns a handler that applies chunks with the
// importers of their entities; keys opens the staged chunks.
func NewImportChunkHandler(pool *pgxpool.Pool, keys crypto.KeyStore, importers map[importing.Entity]Importer, companies CompanyFinder) ImportChunkHandler {
	if pool == nil || companies == nil {
		panic("imports: NewImportChunkHandler: nil dependency")
	}
	store := NewStore(pool, keys)
	return ImportChunkHandler{pool: pool, tx: poolTransactor{pool}, store: store, importers: importers, companies: companies, ahead: newAhead(store),
		log: slog.Default(), metrics: newImportMetrics(slices.Sorted(maps.Keys(importers)))}
}

// Handle applies the chunk exactly once, in one transaction: lock the
// chunk, skip it if it is done (a redelivered message), let the Importer
// append its commit, store the rejections and counts, delete the payload.
// Any error rolls all of that back, and the caller retries the chunk; a
// *PermanentError instead fails the run, and Handle returns nil. From the
// isolateAfter-th attempt that fails for a reason retrying does not cure,
// the records the store refuses are rejected and the rest applied
// (chunk_isolate.go), over as many attempts, each bounded, as
// finding them takes.
func (h ImportChunkHandler) Handle(ctx context.Context, cmd ImportChunk) error {
	var entity importing.Entity
	var isolated []IsolatedRecord
	resolvedNext, aheadUsed := false, false
	err := h.tx.InTx(ctx, func(tx pgx.Tx) error {
		c, ok, err := h.store.LockChunk(ctx, tx, cmd.RunID, cmd.Seq)
		if err != nil || !ok || c.Done {
			return err
		}
		entity = c.Entity
		imp := h.importers[c.Entity]
		if imp == nil {
			// Not permanent: this process lacks the importer (an older
			// binary, a CLI built without it); another may have it.
			return fmt.Errorf("imports: import chunk: no importer for %q", c.Entity)
		}
		co, err := h.companies.ByID(ctx, c.CompanyID)
		if domain.ErrorCode(err) == domain.NotFound {
			return Permanent(errors.New("the company no longer exists"))
		}
		if err != nil {
			return err
		}
		var prepared Prepared
		var resolution Resolution
		if p, ok := imp.(Preparer); ok {
			prepared, resolution = h.ahead.take(ctx, c, co)
			h.ahead.start(p, c.RunID, c.Seq+1, co)
		}
		chunk := Chunk{
			Company: co, RunID: c.RunID, Seq: c.Seq, FirstIndex: c.FirstIndex, Records: c.Records, Prepared: prepared,
			MayDestroy: c.MayDestroy,
			Metadata: eventstore.Metadata{
				CompanyID: c.CompanyID, RunID: c.RunID, Actor: c.Actor, Source: c.Source, CorrelationID: c.CorrelationID,
			},
		}
		var out importing.Outcome
		if c.Failures+1 < isolateAfter && len(c.Isolation.Records) == 0 {
			if r, ok := imp.(Resolver); ok {
				if chunk.Resolution, err = resolveChunk(ctx, tx, r, chunk, resolution); err != nil {
					return fmt.Errorf("imports: import chunk %d of run %s: %w", c.Seq, c.RunID, err)
				}
				where := resolvedInTransaction
				if resolution != nil {
					where, aheadUsed = resolvedAhead, true
				}
				h.metrics.resolved.WithLabelValues(string(c.Entity), where).Inc()
				h.ahead.resolve(r, c.RunID, c.Seq+1, co, c.MayDestroy, chunk.Resolution)
				resolvedNext = true
			}
			out, err = runImporter(ctx, tx, imp, chunk)
		} else {
			out, isolated, err = isolate(ctx, tx, imp, chunk, c.Isolation)
		}
		if err != nil {
			return fmt.Errorf("imports: import chunk %d of run %s: %w", c.Seq, c.RunID, err)
		}
		if err := checkOutcome(c, out); err != nil {
			return err
		}
		return h.store.FinishChunk(ctx, tx, c, out)
	})
	if resolvedNext {
		h.ahead.settled(cmd.RunID, cmd.Seq+1, err == nil)
	}
	var perm *PermanentError
	if errors.As(err, &perm) {
		return h.store.FailRun(ctx, cmd.RunID, perm.Error())
	}
	if err != nil {
		h.failed(ctx, cmd, entity, err, aheadUsed)
		return err
	}
	for _, r := range isolated {
		h.metrics.isolated.WithLabelValues(string(entity)).Inc()
		h.log.Warn("an import record the store refuses is rejected; the rest of its chunk is applied",
			"run_id", cmd.RunID, "seq", cmd.Seq, "index", r.Index, "sqlstate", r.Code, "reason", r.Reason)
	}
	return nil
}

// failed counts a failed attempt at a chunk, and records it on the chunk
// when retrying cannot cure it (the count that decides isolateAfter),
// with the progress of the search for the records that fail it when the
// attempt ran out of its budget (isolationPaused). An attempt that wrote
// a resolution made ahead failed perhaps only because that resolution
// was stale (a key another customer took meanwhile, a stream that moved):
// the next attempt resolves in its transaction, so the failure is not
// the chunk's.
func (h ImportChunkHandler) failed(ctx context.Context, cmd ImportChunk, entity importing.Entity, err error, aheadUsed bool) {
	if ctx.Err() != nil || entity == "" {
		return // stopping, or the chunk was not reached: not the chunk's failure
	}
	if aheadUsed || lostRace(err) {
		h.metrics.failures.WithLabelValues(string(entity), failureTransient).Inc()
		return
	}
	h.metrics.failures.WithLabelValues(string(entity), failurePersistent).Inc()
	var p *panicError
	if errors.As(err, &p) {
		h.log.Error("an importer panicked", "run_id", cmd.RunID, "seq", cmd.Seq, "panic", fmt.Sprint(p.value), "stack", string(p.stack))
	}
	var rerr error
	if paused := (*isolationPaused)(nil); errors.As(err, &paused) {
		_, rerr = h.store.RecordIsolation(ctx, cmd.RunID, cmd.Seq, failureReason(err), paused.progress)
	} else {
		_, rerr = h.store.RecordFailure(ctx, cmd.RunID, cmd.Seq, failureReason(err))
	}
	if rerr != nil {
		h.log.Error("record an import chunk's failure", "run_id", cmd.RunID, "seq", cmd.Seq, "err", rerr)
	}
}

// checkOutcome makes sure the Importer accounted for every record once,
// and reported warnings only of the chunk's records, at most
// importing.MaxWarnings. A mismatch is a bug of the importer that
// retrying cannot cure.
func checkOutcome(c stagedChunk, out importing.Outcome) error {
	end := c.FirstIndex + len(c.Records)
	rejected := map[int]bool{}
	for _, r := range out.Rejections {
		if r.Index < c.FirstIndex || r.Index >= end {
			return Permanent(fmt.Errorf("internal error: the %s importer rejected record %d, outside chunk %d (records %d to %d)",
				c.Entity, r.Index, c.Seq, c.FirstIndex, end-1))
		}
		rejected[r.Index] = true
	}
	if out.Accepted < 0 || out.Accepted+len(rejected) != len(c.Records) {
		return Permanent(fmt.Errorf("internal error: the %s importer accepted %d and rejected %d of the %d records of chunk %d",
			c.Entity, out.Accepted, len(rejected), len(c.Records), c.Seq))
	}
	if len(out.Warnings) > importing.MaxWarnings {
		return Permanent(fmt.Errorf("internal error: the %s importer reported %d warnings of chunk %d, more than %d",
			c.Entity, len(out.Warnings), c.Seq, importing.MaxWarnings))
	}
	for _, w := range out.Warnings {
		if w.FirstIndex < c.FirstIndex || w.FirstIndex >= end || w.Count < 1 || w.Count > out.Accepted {
			return Permanent(fmt.Errorf("internal error: the %s importer reported a warning of %d records from record %d, not of the %d accepted of chunk %d",
				c.Entity, w.Count, w.FirstIndex, out.Accepted, c.Seq))
		}
	}
	return nil
}

// lostRace reports whether err is one the same chunk may not meet again:
// an outage or a lost race in the database (pg.Transient), or a stream
// that another writer appended to meanwhile (*eventstore.ConflictError:
// the token backfill, a datatarget command). Such a failure is retried
// as it is, never counted towards isolating the chunk's records.
func lostRace(err error) bool {
	var conflict *eventstore.ConflictError
	return pg.Transient(err) || errors.As(err, &conflict) || errors.Is(err, errStale)
}

// errStale is a write-side state that moved between a chunk's resolving
// and its write (another writer got there first): the chunk is tried
// again, as after a lost race.
var errStale = errors.New("the state the chunk was resolved against moved meanwhile")
