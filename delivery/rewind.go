package delivery

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
)

// applyRewind moves the outlet's progress back to rw.after (or leaves it
// where it is when that is lower), drops the batch being retried (it is
// sent again in its turn) and records rw as applied, in one statement
// fenced by the lease: only the worker that holds the outlet moves its
// progress, between two requests, so a rewind never cuts a batch, and
// two nodes never both send the messages it sends again.
func (d *Deliverer) applyRewind(ctx context.Context, o outletRef, st *state, rw rewind) error {
	err := d.cfg.Pool.QueryRow(ctx, `UPDATE outlet_deliveries SET
			last_delivered_message_number = least(last_delivered_message_number, $3),
			pending_size = 0, failed_attempts = 0, first_failed_at = '-infinity', next_attempt_at = '-infinity',
			rewind_applied = $4
		WHERE outlet_id = $1 AND lease_holder = $2 AND rewind_applied < $4
		RETURNING last_delivered_message_number`, o.outletID, d.cfg.Holder, rw.after, rw.seq).Scan(&st.lastDelivered)
	if errors.Is(err, pgx.ErrNoRows) {
		return errLeaseLost
	}
	if err != nil {
		return err
	}
	st.pendingSize, st.failedAttempts, st.firstFailedAt, st.rewindApplied = 0, 0, time.Time{}, rw.seq
	return nil
}
