package projections

import (
	"context"
	"fmt"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/jackc/pgx/v5"

	"github.com/clientele/clientele/eventstore"
	"github.com/clientele/clientele/internal/bus"
)

// handler applies the commit announced by a message to an async projector.
//
// Delivery is at least once: a crash between the read-model commit and the
// ack, or a lost ack, brings the same commit again. The read model is
// exactly once all the same, because the rows and the checkpoint change in
// one transaction, and that transaction first locks the checkpoint and
// skips a commit that is not after it. Commits arrive in log order (the
// outbox is read in transaction order, like the log), so "after the
// checkpoint" means "not applied yet".
func (r *Runtime) handler(p Projector) message.NoPublishHandlerFunc {
	name := p.Name()
	applied := r.metrics.applied.WithLabelValues(name)
	skipped := r.metrics.skipped.WithLabelValues(name)
	return func(msg *message.Message) error {
		h, err := bus.ParseCommitHeader(msg.Payload)
		if err != nil {
			return fmt.Errorf("projections: %s: %w", name, err)
		}
		n, err := r.apply(msg.Context(), p, h)
		if err != nil {
			return err
		}
		if n == 0 {
			skipped.Inc()
			return nil
		}
		if _, ok := r.leftBehind.LoadAndDelete(name); ok {
			// A commit announced earlier waits behind this one: catch up.
			r.catchUps.Resume(name)
		}
		applied.Add(float64(n))
		if r.cfg.AfterApply != nil {
			r.cfg.AfterApply(name)
		}
		return nil
	}
}

// apply applies commit h unless the checkpoint is already past it, and
// returns the number of events applied: none for a commit held because
// its company is parked (stall.go). When h is not the next commit after
// the checkpoint (an earlier delivery gave up on a commit, see
// catchup.go), it leaves h to the catch-up loop.
func (r *Runtime) apply(ctx context.Context, p Projector, h bus.CommitHeader) (int, error) {
	cp, err := readCheckpoint(ctx, r.cfg.Pool, p.Name())
	if err != nil {
		return 0, err
	}
	if !cp.Position.Less(lastPosition(h)) {
		return 0, nil // a redelivery
	}
	// Only whether a commit lies between the checkpoint and h matters
	// here: bounded by h, the look-up never reaches the rows of running
	// transactions (nextCommit).
	if next, ok, err := r.nextCommit(ctx, cp.Position, h.TxID); err != nil {
		return 0, err
	} else if ok && next != h.TxID {
		// Behind: the catch-up loop applies it, outside this delivery
		// (catchup.go).
		r.leftBehind.Store(p.Name(), true)
		r.catchUps.Resume(p.Name())
		return 0, nil
	}
	return r.applyAnnounced(ctx, p, h)
}

// applyAnnounced applies commit h, the next one after the checkpoint, as
// its message announced it.
func (r *Runtime) applyAnnounced(ctx context.Context, p Projector, h bus.CommitHeader) (int, error) {
	name := p.Name()
	tx, err := r.cfg.Pool.Begin(ctx)
	if err != nil {
		return 0, fmt.Errorf("projections: %s: %w", name, err)
	}
	// Deferred, so that a panicking Apply releases the checkpoint lock too;
	// after Commit it does nothing.
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck
	cp, held, err := lockCheckpointFor(ctx, tx, name, h.CompanyID, lastPosition(h))
	if err != nil {
		return 0, err
	}
	if !cp.Position.Less(lastPosition(h)) {
		// A redelivery: ending the transaction releases the lock.
		return 0, tx.Commit(ctx)
	}
	if held {
		return 0, r.holdAnnounced(ctx, tx, p, h)
	}
	var events []eventstore.RecordedEvent
	wants := true
	if f, ok := p.(TypeFilter); ok && !h.HasAnyType(f.EventTypes()) {
		wants = false // none of its types: nothing to read
	} else if f, ok := p.(CommitFilter); ok && h.CompanyID != "" {
		if wants, err = f.WantsCommit(ctx, tx, h); err != nil {
			return 0, fmt.Errorf("projections: %s: %w", name, err)
		}
	}
	if wants {
		if events, err = r.readCommit(ctx, p, h); err != nil {
			return 0, err
		}
	}
	if len(events) > 0 {
		if err := p.Apply(ctx, tx, events); err != nil {
			return 0, fmt.Errorf("projections: %s: apply commit %d: %w", name, h.TxID, err)
		}
	}
	// The commit's events count as applied, those the projector skips
	// included, as when it is handed them all.
	if err := advanceCheckpoint(ctx, tx, name, lastPosition(h), h.Count); err != nil {
		return 0, err
	}
	if err := tx.Commit(ctx); err != nil {
		return 0, fmt.Errorf("projections: %s: commit: %w", name, err)
	}
	return h.Count, nil
}

// holdAnnounced passes commit h, of a parked company, within tx (which
// lockCheckpointFor found holding it): the commit waits in the log for
// its company's turn (stall.go), but its forgettings are applied now.
func (r *Runtime) holdAnnounced(ctx context.Context, tx pgx.Tx, p Projector, h bus.CommitHeader) error {
	name := p.Name()
	if f, ok := p.(Forgetter); ok && h.HasAnyType(f.ForgetTypes()) {
		forgotten, _, err := r.cfg.Store.ReadCommitTypes(ctx, h.TxID, f.ForgetTypes())
		if err != nil {
			return fmt.Errorf("projections: %s: read commit %d: %w", name, h.TxID, err)
		}
		if err := r.forgetHeld(ctx, tx, p, forgotten); err != nil {
			return err
		}
	}
	if err := advanceCheckpoint(ctx, tx, name, lastPosition(h), h.Count); err != nil {
		return err
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("projections: %s: commit: %w", name, err)
	}
	return nil
}

// readCommit reads commit h for p, only the events of the types p uses if
// it says which (TypeFilter), and checks the commit against its message.
func (r *Runtime) readCommit(ctx context.Context, p Projector, h bus.CommitHeader) ([]eventstore.RecordedEvent, error) {
	name := p.Name()
	var events []eventstore.RecordedEvent
	var span eventstore.CommitSpan
	var err error
	if f, ok := p.(TypeFilter); ok {
		events, span, err = r.cfg.Store.ReadCommitTypes(ctx, h.TxID, f.EventTypes())
	} else {
		events, err = r.cfg.Store.ReadCommit(ctx, h.TxID)
		span.Count = len(events)
		if len(events) > 0 {
			span.First, span.Last = events[0].Position.Global, events[len(events)-1].Position.Global
		}
	}
	if err != nil {
		return nil, fmt.Errorf("projections: %s: read commit %d: %w", name, h.TxID, err)
	}
	if span.Count != h.Count || span.Count == 0 || span.First != h.First || span.Last != h.Last {
		return nil, fmt.Errorf("projections: %s: commit %d has %d events in the log, its message announced %d (%d..%d)",
			name, h.TxID, span.Count, h.Count, h.First, h.Last)
	}
	return events, nil
}
