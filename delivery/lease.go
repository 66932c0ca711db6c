package delivery

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
)

// errLeaseLost reports that another worker holds the outlet's lease now.
var errLeaseLost = errors.New("delivery: the outlet's lease was lost")

// candidates returns outlets that have messages to deliver and are due,
// or a rewind to apply, or a parked batch to redeliver, and are not leased by another process,
// least recently attempted first.
func (d *Deliverer) candidates(ctx context.Context, skip []string, limit int) ([]outletRef, error) {
	// A datasync datatarget's messages are counted in datasync_targets
	// (by the async projection that writes them; campaign_sync_targets
	// for campaigns, written by campaign_stats; segment_sync_targets for
	// segments, written by segment_members), a messages one's in
	// datatargets.
	rows, err := d.cfg.Pool.Query(ctx, `SELECT o.company_id, o.datatarget_id, o.id, t.datatarget_type = 'datasync'
		FROM datatarget_outlets o
		JOIN datatargets t ON t.company_id = o.company_id AND t.id = o.datatarget_id
		LEFT JOIN datasync_targets f ON f.datatarget_id = t.id
		LEFT JOIN campaign_sync_targets g ON g.datatarget_id = t.id
		LEFT JOIN segment_sync_targets e ON e.datatarget_id = t.id
		LEFT JOIN outlet_deliveries s ON s.outlet_id = o.id
		WHERE o.enabled AND t.enabled
			AND ((greatest(t.last_message_number, f.last_message_number, g.last_message_number, e.last_message_number) > coalesce(s.last_delivered_message_number, 0)
					AND coalesce(s.next_attempt_at, '-infinity') <= now())
				OR o.rewind_seq > coalesce(s.rewind_applied, 0)
				OR EXISTS (SELECT FROM outlet_parked p WHERE p.outlet_id = o.id AND p.redeliver))
			AND (s.outlet_id IS NULL OR s.lease_expires_at < now() OR s.lease_holder = $1)
			AND NOT (o.id = ANY($2))
		ORDER BY coalesce(s.last_attempt_at, '-infinity')
		LIMIT $3`, d.cfg.Holder, skip, limit)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (outletRef, error) {
		var o outletRef
		err := row.Scan(&o.companyID, &o.datatargetID, &o.outletID, &o.datasync)
		return o, err
	})
}

// acquire takes the outlet's lease if it is free, expired or already
// ours, and returns the delivery state; ok is false when another worker
// holds it. Two processes racing for one outlet are serialised by the
// row: the loser's condition is evaluated on the winner's row.
func (d *Deliverer) acquire(ctx context.Context, o outletRef) (st state, ok bool, err error) {
	err = d.cfg.Pool.QueryRow(ctx, `INSERT INTO outlet_deliveries AS s (outlet_id, company_id, datatarget_id, lease_holder, lease_expires_at)
		VALUES ($1, $2, $3, $4, now() + $5::interval)
		ON CONFLICT (outlet_id) DO UPDATE SET lease_holder = EXCLUDED.lease_holder, lease_expires_at = EXCLUDED.lease_expires_at
		WHERE s.lease_expires_at < now() OR s.lease_holder = EXCLUDED.lease_holder
		RETURNING s.last_delivered_message_number, s.delivered_batch_count, s.entry_count, s.pending_size,
			s.failed_attempts, greatest(s.next_attempt_at, 'epoch'), greatest(s.last_attempt_at, 'epoch'),
			greatest(s.first_failed_at, 'epoch'), s.rewind_applied`,
		o.outletID, o.companyID, o.datatargetID, d.cfg.Holder, d.cfg.LeaseTTL).Scan(
		&st.lastDelivered, &st.batchCount, &st.entryCount, &st.pendingSize, &st.failedAttempts, &st.nextAttemptAt, &st.lastAttemptAt, &st.firstFailedAt, &st.rewindApplied)
	if errors.Is(err, pgx.ErrNoRows) {
		return st, false, nil
	}
	return st, err == nil, err
}

// renew extends the lease; errLeaseLost when it is no longer ours.
func (d *Deliverer) renew(ctx context.Context, outletID string) error {
	tag, err := d.cfg.Pool.Exec(ctx, `UPDATE outlet_deliveries SET lease_expires_at = now() + $3::interval
		WHERE outlet_id = $1 AND lease_holder = $2`, outletID, d.cfg.Holder, d.cfg.LeaseTTL)
	if err == nil && tag.RowsAffected() == 0 {
		return errLeaseLost
	}
	return err
}

// release gives the lease up, so another process may take the outlet at
// once rather than after the lease expires.
func (d *Deliverer) release(ctx context.Context, outletID string) error {
	_, err := d.cfg.Pool.Exec(ctx, `UPDATE outlet_deliveries SET lease_holder = '', lease_expires_at = '-infinity'
		WHERE outlet_id = $1 AND lease_holder = $2`, outletID, d.cfg.Holder)
	return err
}
