package projections

import (
	"context"
	"fmt"

	"github.com/clientele/clientele/eventstore"
)

// PageApplier is implemented by an async projector whose Apply costs
// much less per event when handed many commits at once (a rebuild's
// pages), and whose tables come out the same whatever the grouping of
// commits into calls. When such a projector is behind, its catch-up loop
// applies the commits waiting for it a page at a time, each page in one
// transaction with the checkpoint, instead of a transaction per commit:
// one Apply, one checkpoint write and one durable commit for up to
// pagedCatchUpPage events. A projector that keeps up still gets each
// commit alone, as its message announces it.
type PageApplier interface {
	// AppliesPages marks the projector; it is never called.
	AppliesPages()
}

// pagedCatchUpPage is how many events a PageApplier's catch-up reads and
// applies at a time: a few import commits (a thousand records each), as
// far as the log goes; the transaction stays short (a rebuild's page is
// 10,000 events).
const pagedCatchUpPage = 5_000

// applyPage applies commits, whole and in log order, the first right after
// after, to p in one transaction, and advances the checkpoint past the
// last one. It applies nothing and reports false when the commits need the
// care of applyOrPark: a company of the projector is parked (its commits
// are held), or Apply fails (the commit at fault is found and parked
// commit by commit). A checkpoint moved meanwhile by another consumer
// makes it report true with nothing applied: the caller reads again.
func (r *Runtime) applyPage(ctx context.Context, p Projector, after eventstore.Position, commits [][]eventstore.RecordedEvent, types []string) (n int, ok bool, err error) {
	name := p.Name()
	tx, err := r.cfg.Pool.Begin(ctx)
	if err != nil {
		return 0, false, fmt.Errorf("projections: %s: %w", name, err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck
	cp, err := lockCheckpoint(ctx, tx, name)
	if err != nil {
		return 0, false, err
	}
	if cp.Position != after {
		return 0, true, nil
	}
	// Parking and resuming lock the checkpoint too, so what this reads
	// holds until the commit.
	var parked bool
	if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM projection_stalls WHERE projector = $1)`, name).Scan(&parked); err != nil {
		return 0, false, fmt.Errorf("projections: %s: stalls: %w", name, err)
	}
	if parked {
		return 0, false, nil
	}
	var events []eventstore.RecordedEvent
	for _, c := range commits {
		events = append(events, ofTypes(c, types)...)
		n += len(c)
	}
	if len(events) > 0 {
		apply := func() (err error) {
			defer recovered(&err)
			return p.Apply(ctx, tx, events)
		}
		if err := apply(); err != nil {
			// Commit by commit instead: the failing one is retried, then
			// parked, and the others are applied.
			return 0, false, nil
		}
	}
	last := commits[len(commits)-1]
	if err := advanceCheckpoint(ctx, tx, name, last[len(last)-1].Position, n); err != nil {
		return 0, false, err
	}
	if err := tx.Commit(ctx); err != nil {
		return 0, false, fmt.Errorf("projections: %s: commit: %w", name, err)
	}
	return n, true, nil
}
