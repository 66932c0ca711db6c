package projections

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/clientele/clientele/eventstore"
)

// A checkpoint is the last position a projector applied, kept in
// projection_checkpoints as an (xid8, global position) pair: log order is
// transaction order first (see eventstore/postgres), so a global position
// alone could not say whether a commit was applied.
type checkpoint struct {
	Position      eventstore.Position
	EventsApplied int64
	UpdatedAt     time.Time
}

// querier is what the checkpoint functions need of a pool, a connection or
// a transaction.
type querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

const selectCheckpoint = `SELECT transaction_id::text, global_position, events_applied, updated_at
	FROM projection_checkpoints WHERE name = $1`

func scanCheckpoint(row pgx.Row) (checkpoint, error) {
	var cp checkpoint
	if err := row.Scan(TxID{To: &cp.Position.TxID}, &cp.Position.Global, &cp.EventsApplied, &cp.UpdatedAt); err != nil {
		return checkpoint{}, err
	}
	return cp, nil
}

// ensureCheckpoint creates the projector's checkpoint at the start of the
// log unless it exists.
func ensureCheckpoint(ctx context.Context, q querier, name string) error {
	_, err := q.Exec(ctx, `INSERT INTO projection_checkpoints (name) VALUES ($1) ON CONFLICT (name) DO NOTHING`, name)
	if err != nil {
		return fmt.Errorf("projections: %s: create checkpoint: %w", name, err)
	}
	return nil
}

// readCheckpoint returns the projector's checkpoint, the start of the log
// when it has none.
func readCheckpoint(ctx context.Context, q querier, name string) (checkpoint, error) {
	cp, err := scanCheckpoint(q.QueryRow(ctx, selectCheckpoint, name))
	if errors.Is(err, pgx.ErrNoRows) {
		return checkpoint{}, nil
	}
	if err != nil {
		return checkpoint{}, fmt.Errorf("projections: %s: read checkpoint: %w", name, err)
	}
	return cp, nil
}

// lockCheckpoint reads the projector's checkpoint and locks it until tx
// ends, creating it first if needed. The lock serialises everything that
// moves the checkpoint: consumers of the same projector on several nodes,
// and the final step of a rebuild.
func lockCheckpoint(ctx context.Context, tx pgx.Tx, name string) (checkpoint, error) {
	cp, err := scanCheckpoint(tx.QueryRow(ctx, selectCheckpoint+` FOR UPDATE`, name))
	if errors.Is(err, pgx.ErrNoRows) {
		if err := ensureCheckpoint(ctx, tx, name); err != nil {
			return checkpoint{}, err
		}
		cp, err = scanCheckpoint(tx.QueryRow(ctx, selectCheckpoint+` FOR UPDATE`, name))
	}
	if err != nil {
		return checkpoint{}, fmt.Errorf("projections: %s: lock checkpoint: %w", name, err)
	}
	return cp, nil
}

// lockCheckpointFor is lockCheckpoint for a commit of company ending at
// last, which also says, in the same round trip, whether the projector
// holds the commit: held is true when the company is parked for the
// projector (stall.go) and the commit is after the checkpoint. The call
// then records the commit as the company's last held one, so the caller
// must apply none of it but its forgettings, or roll back.
//
// The stall is read by a second statement, after the lock is granted: in
// READ COMMITTED, a statement that waited for the lock would still see
// the stalls as they were when it started, not as the transaction that
// held the lock (a park or a resumption) left them.
func lockCheckpointFor(ctx context.Context, tx pgx.Tx, name, company string, last eventstore.Position) (cp checkpoint, held bool, err error) {
	var b pgx.Batch
	b.Queue(selectCheckpoint+` FOR UPDATE`, name)
	b.Queue(`UPDATE projection_stalls s SET held_transaction_id = $3::text::xid8, held_global_position = $4
		FROM projection_checkpoints c
		WHERE s.projector = $1 AND s.company_id = $2 AND c.name = $1
		  AND (c.transaction_id, c.global_position) < ($3::text::xid8, $4)
		RETURNING true`, name, company, strconv.FormatUint(last.TxID, 10), last.Global)
	res := tx.SendBatch(ctx, &b)
	cp, lockErr := scanCheckpoint(res.QueryRow())
	heldErr := res.QueryRow().Scan(&held)
	closeErr := res.Close()
	switch {
	case errors.Is(lockErr, pgx.ErrNoRows):
		// No checkpoint yet: create it, and the stall cannot be either.
		if err := ensureCheckpoint(ctx, tx, name); err != nil {
			return checkpoint{}, false, err
		}
		return lockCheckpointFor(ctx, tx, name, company, last)
	case lockErr != nil:
		return checkpoint{}, false, fmt.Errorf("projections: %s: lock checkpoint: %w", name, lockErr)
	case heldErr != nil && !errors.Is(heldErr, pgx.ErrNoRows):
		return checkpoint{}, false, fmt.Errorf("projections: %s: hold commit %d: %w", name, last.TxID, heldErr)
	case closeErr != nil:
		return checkpoint{}, false, fmt.Errorf("projections: %s: lock checkpoint: %w", name, closeErr)
	}
	return cp, held, nil
}

// advanceCheckpoint moves the checkpoint to pos after n more events.
func advanceCheckpoint(ctx context.Context, tx pgx.Tx, name string, pos eventstore.Position, n int) error {
	_, err := tx.Exec(ctx, `UPDATE projection_checkpoints
		SET transaction_id = $2::text::xid8, global_position = $3, events_applied = events_applied + $4, updated_at = now()
		WHERE name = $1`, name, strconv.FormatUint(pos.TxID, 10), pos.Global, n)
	if err != nil {
		return fmt.Errorf("projections: %s: advance checkpoint: %w", name, err)
	}
	return nil
}

// resetCheckpoint sets the checkpoint of a rebuilt projector: at pos, after
// applying n events from the start of the log.
func resetCheckpoint(ctx context.Context, tx pgx.Tx, name string, pos eventstore.Position, n int64) error {
	_, err := tx.Exec(ctx, `UPDATE projection_checkpoints
		SET transaction_id = $2::text::xid8, global_position = $3, events_applied = $4, updated_at = now()
		WHERE name = $1`, name, strconv.FormatUint(pos.TxID, 10), pos.Global, n)
	if err != nil {
		return fmt.Errorf("projections: %s: reset checkpoint: %w", name, err)
	}
	return nil
}

// countEvents counts the events after `after` up to and including upTo,
// no more than atMost when it is above zero
// (eventstore.EventLog.CountEvents), reading log in q: cheap for a small
// lag, a full scan from the start of a log in PostgreSQL.
func countEvents(ctx context.Context, log eventstore.EventLog, q eventstore.Querier, after, upTo eventstore.Position, atMost int64) (int64, error) {
	n, err := log.CountEvents(ctx, q, after, upTo, atMost)
	if err != nil {
		return 0, fmt.Errorf("projections: count events: %w", err)
	}
	return n, nil
}

// TxID is a scan target for a transaction id selected as text (an xid8
// column cast with ::text: pgx has no codec of xid8), kept in *To.
type TxID struct{ To *uint64 }

// Scan implements sql.Scanner.
func (x TxID) Scan(src any) error {
	s, ok := src.(string)
	if !ok {
		return fmt.Errorf("transaction id: %T, want its text", src)
	}
	id, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return fmt.Errorf("transaction id %q: %w", s, err)
	}
	*x.To = id
	return nil
}
