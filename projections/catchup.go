package projections

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/clientele/clientele/eventstore"
	"github.com/clientele/clientele/internal/backoff"
	"github.com/clientele/clientele/internal/bus"
	"github.com/clientele/clientele/internal/pg"
)

// A commit that an async projector fails to apply is not retried for ever
// inside the delivery of its message: that would hold the delivery's
// transaction, and with it every reader of the event log on the server
// (bus.Resumer says why). The runtime is a bus.Resumer keyed by projector
// name:
//
//   - a delivery of the next commit after the checkpoint tries a few times
//     (MessageAttempts), then gives up and acks: the checkpoint stays
//     before the failed commit, nothing is skipped, and the projector is
//     handed to its catch-up loop;
//   - a delivery of a commit that is not the next one (the projector is
//     behind) acks at once and hands the projector to the catch-up loop
//     (catchUpTo), which applies the commits from the log, commit by
//     commit, each in its own short transaction, outside any delivery;
//     every projector is caught up on its own, side by side;
//   - a commit that keeps failing there for a reason that will come back
//     (applyOrPark) parks its company (stall.go): the projector goes on
//     with every other company. A pass that fails for a transient reason
//     (an outage) is retried with backoff (1 s doubling to StallAfter),
//     and parks nothing;
//   - the lag watcher hands the loop a projector whose checkpoint has not
//     moved for StallAfter while the log has more, so a failed commit is
//     retried even when nothing new arrives, and a projector with a
//     parked company due for a retry.
//
// So the projector stops at a commit alone during an outage, and resumes
// where it stopped; and a commit it cannot apply stops it for that
// commit's company alone: the read model is never missing a commit.

// newCatchUps returns the catch-up loop of the runtime's async projectors.
func (r *Runtime) newCatchUps() (*bus.Resumer, error) {
	return bus.NewResumer(bus.ResumerConfig{
		CatchUp: r.catchUpTo,
		// Every projector side by side: they are few and fixed, and one
		// projector's long catch-up (a backlog, a commit tried before its
		// company is parked) must not hold back another's. The import
		// worker, keyed by company, takes one at a time instead.
		Parallel:         max(len(r.cfg.Async), 1),
		MinBackoff:       time.Second,
		MaxBackoff:       r.cfg.StallAfter,
		Attempts:         r.cfg.MessageAttempts,
		RetryMaxInterval: r.cfg.RetryMaxInterval,
		Logger:           r.wlog,
		GaveUp: func(ctx context.Context, name string, err error) {
			r.cfg.Logger.Log(ctx, pg.Level(err), "projections: a projector failed to apply a commit; it stays before it, and its catch-up loop retries it",
				"projector", name, "attempts", r.cfg.MessageAttempts, "database_unavailable", pg.Transient(err), "err", err)
		},
		Failed: func(ctx context.Context, name string, err error, retryIn time.Duration) {
			r.metrics.errors.WithLabelValues(name).Inc()
			r.cfg.Logger.Log(ctx, pg.Level(err), "projections: a projector is stopped at a commit; it is retried, and no later commit is applied before it",
				"projector", name, "database_unavailable", pg.Transient(err), "retry_in", retryIn, "err", err)
		},
	})
}

// catchUpTo catches the async projector called name up to the head of
// the log, then resumes its parked companies due for a retry (retryDue).
// It does all there is to do: it never asks for more.
func (r *Runtime) catchUpTo(ctx context.Context, name string) (more bool, err error) {
	p := r.async[name]
	head, err := r.cfg.Store.Head(ctx)
	if err == nil {
		_, err = r.catchUp(ctx, p, head)
	}
	if err != nil {
		return false, err
	}
	r.retryDue(ctx, p)
	return false, nil
}

// nextCommit returns the transaction id of the first commit after pos in
// the log, if it is not after the commit of transaction upTo, and false
// when there is none (eventstore.EventLog.NextCommit; postgres.Log.NextCommit
// says why upTo keeps it cheap).
func (r *Runtime) nextCommit(ctx context.Context, pos eventstore.Position, upTo uint64) (uint64, bool, error) {
	tx, ok, err := r.cfg.Log.NextCommit(ctx, r.cfg.Pool, pos, upTo)
	if err != nil {
		return 0, false, fmt.Errorf("projections: next commit: %w", err)
	}
	return tx, ok, nil
}

// catchUp applies to p, in log order, every commit after its checkpoint
// up to and including the one ending at upTo, each commit in its own
// transaction, and returns the number of events applied (or held). It
// parks the company of a commit that keeps failing (applyOrPark), and
// stops at the first commit that fails otherwise, with its error: the
// commits before it stay applied.
func (r *Runtime) catchUp(ctx context.Context, p Projector, upTo eventstore.Position) (int, error) {
	name := p.Name()
	types := eventTypes(p)
	_, paged := p.(PageApplier)
	page := catchUpPage
	if paged {
		page = pagedCatchUpPage
	}
	total := 0
	for {
		cp, err := readCheckpoint(ctx, r.cfg.Pool, name)
		if err != nil {
			return total, err
		}
		if !cp.Position.Less(upTo) {
			return total, nil
		}
		events, err := r.cfg.Store.ReadLog(ctx, cp.Position, page)
		if err != nil {
			return total, fmt.Errorf("projections: %s: catch up: %w", name, err)
		}
		if len(events) == 0 {
			return total, nil
		}
		if paged {
			// The page's commits up to upTo in one transaction
			// (catchup_pages.go); commit by commit when that cannot be.
			cs := commits(events)
			for len(cs) > 0 && upTo.Less(cs[len(cs)-1][len(cs[len(cs)-1])-1].Position) {
				cs = cs[:len(cs)-1]
			}
			if len(cs) == 0 {
				return total, nil
			}
			n, ok, err := r.applyPage(ctx, p, cp.Position, cs, types)
			if err != nil {
				return total, err
			}
			if ok {
				total += n
				continue
			}
		}
		for _, commit := range commits(events) {
			last := commit[len(commit)-1].Position
			if upTo.Less(last) {
				return total, nil
			}
			n, err := r.applyOrPark(ctx, p, cp.Position, commit, types)
			if err != nil {
				return total, err
			}
			total += n
			cp.Position = last
		}
	}
}

// catchUpPage is the number of events read from the log at a time.
const catchUpPage = 1000

// commits splits events read from the log (whole commits, in order) into
// their commits.
func commits(events []eventstore.RecordedEvent) [][]eventstore.RecordedEvent {
	var out [][]eventstore.RecordedEvent
	for start := 0; start < len(events); {
		end := start + 1
		for end < len(events) && events[end].Position.TxID == events[start].Position.TxID {
			end++
		}
		out = append(out, events[start:end])
		start = end
	}
	return out
}

// applyOrPark applies one commit read from the log to p (applyCommit).
// A failure that will come back (permanent) is tried MessageAttempts
// times, with backoff, then the commit's company is parked (stall.go)
// and the projector goes on; any other failure is returned.
func (r *Runtime) applyOrPark(ctx context.Context, p Projector, after eventstore.Position, commit []eventstore.RecordedEvent, types []string) (int, error) {
	wait := backoff.Doubling{Min: 100 * time.Millisecond, Max: r.cfg.RetryMaxInterval}
	for attempt := 1; ; attempt++ {
		n, err := r.applyCommit(ctx, p, after, commit, types)
		if err == nil || !Permanent(err) {
			return n, err
		}
		r.metrics.errors.WithLabelValues(p.Name()).Inc()
		if attempt >= r.cfg.MessageAttempts {
			return r.park(ctx, p, after, commit, err)
		}
		select {
		case <-ctx.Done():
			return 0, err
		case <-time.After(wait.After(attempt)):
		}
	}
}

// applyCommit applies one commit read from the log to p in one
// transaction, if the checkpoint is still at after (another consumer may
// have moved it), and advances the checkpoint past it. The commit of a
// parked company is held instead: only its forgettings are applied.
func (r *Runtime) applyCommit(ctx context.Context, p Projector, after eventstore.Position, commit []eventstore.RecordedEvent, types []string) (n int, err error) {
	defer recovered(&err)
	name := p.Name()
	tx, err := r.cfg.Pool.Begin(ctx)
	if err != nil {
		return 0, fmt.Errorf("projections: %s: %w", name, err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck
	last := commit[len(commit)-1].Position
	cp, held, err := lockCheckpointFor(ctx, tx, name, commit[0].Metadata.CompanyID, last)
	if err != nil {
		return 0, err
	}
	if cp.Position != after {
		return 0, nil // moved on meanwhile (rolled back: nothing held); the caller reads again
	}
	if held {
		err = r.forgetHeld(ctx, tx, p, forgottenIn(p, commit))
	} else if events := ofTypes(commit, types); len(events) > 0 {
		if err = p.Apply(ctx, tx, events); err != nil {
			err = fmt.Errorf("projections: %s: apply commit %d: %w", name, last.TxID, err)
		}
	}
	if err != nil {
		return 0, err
	}
	if err := advanceCheckpoint(ctx, tx, name, last, len(commit)); err != nil {
		return 0, err
	}
	if err := tx.Commit(ctx); err != nil {
		return 0, fmt.Errorf("projections: %s: commit: %w", name, err)
	}
	return len(commit), nil
}

// resumeStalled hands to the catch-up loop every async projector whose
// checkpoint has not moved for StallAfter (by the database's clock) while
// the log goes further: the retry of a commit whose deliveries gave up.
func (r *Runtime) resumeStalled(ctx context.Context, head eventstore.Position) {
	names := make([]string, len(r.cfg.Async))
	for i, p := range r.cfg.Async {
		names[i] = p.Name()
	}
	rows, err := r.cfg.Pool.Query(ctx, `SELECT name FROM projection_checkpoints
		WHERE name = ANY($1) AND updated_at < now() - $2::interval
		  AND (transaction_id, global_position) < ($3::text::xid8, $4)`,
		names, r.cfg.StallAfter, strconv.FormatUint(head.TxID, 10), head.Global)
	if err != nil {
		if ctx.Err() == nil {
			r.cfg.Logger.Warn("projections: look for stalled projectors", "err", err)
		}
		return
	}
	stalled, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return
	}
	for _, name := range stalled {
		r.catchUps.Resume(name)
	}
}
