package projections

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
)

// finishAttempts is how often a rebuild tries its final swap when it times
// out waiting for a lock (a long query on an old table, say) or loses a
// deadlock.
const finishAttempts = 3

// finishLockTimeout bounds each lock wait of the final swap: while it
// waits, others wait behind it (appends, or readers of the old tables).
// A variable for tests.
var finishLockTimeout = 10 * time.Second

// finish applies the rest of the log and swaps the tables in one
// transaction.
func (rb *rebuilder) finish(ctx context.Context) error {
	return pgx.BeginFunc(ctx, rb.conn, func(tx pgx.Tx) error {
		timeout := strconv.FormatInt(finishLockTimeout.Milliseconds(), 10)
		if _, err := tx.Exec(ctx, `SELECT set_config('lock_timeout', $1, true)`, timeout); err != nil {
			return err
		}
		var err error
		if rb.kind == KindInline {
			err = rb.finishInline(ctx, tx)
		} else {
			err = rb.finishAsync(ctx, tx)
		}
		if err != nil {
			return err
		}
		for _, t := range rb.p.Tables() {
			if _, err := tx.Exec(ctx, `DROP TABLE `+pgx.Identifier{"public", t}.Sanitize()); err != nil {
				return fmt.Errorf("drop old table %s: %w", t, err)
			}
			if _, err := tx.Exec(ctx, fmt.Sprintf(`ALTER TABLE %s.%s SET SCHEMA public`, rb.schema, pgx.Identifier{t}.Sanitize())); err != nil {
				return fmt.Errorf("move table %s: %w", t, err)
			}
		}
		if rb.kind == KindAsync {
			if err := resetCheckpoint(ctx, tx, rb.p.Name(), rb.pos, rb.done); err != nil {
				return err
			}
			if err := replaceStalls(ctx, tx, rb.p.Name(), rb.parked); err != nil {
				return err
			}
		}
		_, err = tx.Exec(ctx, `DROP SCHEMA `+rb.schema+` CASCADE`)
		return err
	})
}

// finishInline stops appends and applies every committed event. Appends
// wrote to the old tables up to this point, so all of them must be in the
// new ones: here no bound on pg_snapshot_xmin is needed nor wanted, since
// with the lock held no transaction has uncommitted events, and one that
// is still running (waiting for the lock) appends only after the swap.
func (rb *rebuilder) finishInline(ctx context.Context, tx pgx.Tx) error {
	if err := rb.log.LockAppends(ctx, tx); err != nil {
		return err
	}
	events, err := rb.log.ReadAfter(ctx, tx, rb.pos)
	if err != nil || len(events) == 0 {
		return err
	}
	if err := rb.apply(ctx, tx, events); err != nil {
		return err
	}
	return rb.advance(ctx, events)
}

// finishAsync stops the projector's handler (it waits on the checkpoint)
// and applies the log as far as ReadLog goes. The checkpoint must stay
// where ReadLog ended: a commit beyond pg_snapshot_xmin may still be
// preceded by one that commits later, which the handler will bring.
func (rb *rebuilder) finishAsync(ctx context.Context, tx pgx.Tx) error {
	cp, err := lockCheckpoint(ctx, tx, rb.p.Name())
	if err != nil {
		return err
	}
	for {
		events, err := rb.store.ReadLog(ctx, rb.pos, rebuildPageSize)
		if err != nil {
			return err
		}
		if len(events) > 0 {
			if err := rb.apply(ctx, tx, events); err != nil {
				return err
			}
			if err := rb.advance(ctx, events); err != nil {
				return err
			}
		}
		if len(events) < rebuildPageSize {
			break
		}
	}
	// The handler only applies what ReadLog could see before, so it cannot
	// be ahead; if it were, its commits would be missing from the new
	// tables for good.
	if rb.pos.Less(cp.Position) {
		return fmt.Errorf("the checkpoint %s is ahead of the log read %s", cp.Position, rb.pos)
	}
	return nil
}
