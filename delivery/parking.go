package delivery

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/clientele/clientele/domain/datatarget"
)

// Parking. An outlet's failure policy (datatarget.FailurePolicy) parks a
// batch that failed too often or for too long: the worker moves the
// outlet's progress past it and writes it to outlet_parked, in one
// statement fenced by the lease and the progress, and goes on with the
// next messages. The gap shows in the outlet's parked_count and in its
// log, whose last failed entry of the batch says "(batch parked)".
//
// An admin asks for a parked batch to be sent again (an event the
// datatargets projector marks on the row); the worker sends marked
// batches before the queue's next one, reading their messages from the
// queue again (so a datasync batch goes out as the queue holds it now:
// a person forgotten meanwhile goes out forgotten), logs the attempt
// like any other, and deletes the row once the receiver accepted it. A
// redelivery that fails leaves the batch parked, unmarked.

// parkedSuffix marks, in the log, the last failed attempt of a batch
// that was parked.
const parkedSuffix = " (batch parked)"

// park parks the batch being retried (st.pendingSize messages after
// st.lastDelivered). errLeaseLost when the lease, or the progress, moved.
func (d *Deliverer) park(ctx context.Context, o outletRef, st *state) error {
	last := st.lastDelivered + int64(st.pendingSize)
	var id int64
	err := d.cfg.Pool.QueryRow(ctx, `WITH prev AS (
			SELECT l.http_status, l.fail_reason FROM outlet_log l JOIN outlet_deliveries x
				ON x.outlet_id = l.outlet_id AND l.entry_number = x.entry_count
			WHERE x.outlet_id = $1),
		s AS (
			UPDATE outlet_deliveries SET last_delivered_message_number = $4, pending_size = 0, failed_attempts = 0,
				next_attempt_at = '-infinity', first_failed_at = '-infinity', parked_total = parked_total + 1
			WHERE outlet_id = $1 AND lease_holder = $2 AND last_delivered_message_number = $3 AND pending_size > 0
			RETURNING parked_total, company_id, entry_count),
		l AS (
			UPDATE outlet_log x SET fail_reason = x.fail_reason || $7 FROM s
			WHERE x.outlet_id = $1 AND x.entry_number = s.entry_count AND x.status = 'FAIL')
		INSERT INTO outlet_parked (outlet_id, id, company_id, first_message_number, last_message_number, batch_size,
			attempts, first_failed_at, parked_at, last_http_status, last_fail_reason)
		SELECT $1, s.parked_total, s.company_id, $3 + 1, $4, $4 - $3, $5, $6, now(),
			coalesce(prev.http_status, 0), coalesce(prev.fail_reason, '')
		FROM s LEFT JOIN prev ON true
		RETURNING id`,
		o.outletID, d.cfg.Holder, st.lastDelivered, last, st.failedAttempts, st.firstFailedAt, parkedSuffix).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return errLeaseLost
	}
	if err != nil {
		return err
	}
	d.metrics.parked.Inc()
	st.lastDelivered = last
	st.pendingSize, st.failedAttempts, st.firstFailedAt = 0, 0, time.Time{}
	return nil
}

// parkedBatch is a parked batch marked for redelivery.
type parkedBatch struct {
	id, first, last int64
}

// nextRedelivery returns the oldest parked batch marked for redelivery.
func (d *Deliverer) nextRedelivery(ctx context.Context, o outletRef) (parkedBatch, bool, error) {
	var p parkedBatch
	err := d.cfg.Pool.QueryRow(ctx, `SELECT id, first_message_number, last_message_number FROM outlet_parked
		WHERE outlet_id = $1 AND redeliver ORDER BY id LIMIT 1`, o.outletID).Scan(&p.id, &p.first, &p.last)
	if errors.Is(err, pgx.ErrNoRows) {
		return p, false, nil
	}
	return p, err == nil, err
}

// redeliver sends a parked batch once, read from the queue again, and
// records the attempt.
func (d *Deliverer) redeliver(ctx, held context.Context, o outletRef, s *sender, st *state, p parkedBatch) error {
	msgs, err := d.fetch(ctx, o, p.first-1, int(p.last-p.first+1))
	if err != nil {
		return err
	}
	batch := msgs[:0]
	for _, m := range msgs {
		if m.number <= p.last {
			batch = append(batch, m)
		}
	}
	if len(batch) == 0 {
		// Nothing left of it in the queue: nothing to send.
		_, err := d.cfg.Pool.Exec(ctx, `DELETE FROM outlet_parked WHERE outlet_id = $1 AND id = $2`, o.outletID, p.id)
		return err
	}
	date := d.cfg.Now().UTC().Truncate(time.Microsecond)
	res := s.send(held, batch, date, st.batchCount+1)
	if held.Err() != nil {
		return errLeaseLost
	}
	rctx, cancel := context.WithTimeout(held, recordTimeout)
	defer cancel()
	if err := d.recordAttempt(rctx, o, res.entry, 0, batch, p.id); err != nil {
		return err
	}
	d.metrics.observe(res.entry)
	if res.entry.Status == datatarget.StatusOK {
		st.batchCount++
	}
	return nil
}

// insertRedelivery writes a redelivery's log entry and its outcome: the
// parked batch deleted once accepted, else unmarked with its last
// failure, in one statement fenced by the lease.
func (d *Deliverer) insertRedelivery(ctx context.Context, q querier, o outletRef, e datatarget.LogEntry, parkedID int64) error {
	ok := e.Status == datatarget.StatusOK
	raw, err := d.sealRawTexts(o.outletID, e)
	if err != nil {
		return err
	}
	var n int64
	err = q.QueryRow(ctx, `WITH s AS (
			UPDATE outlet_deliveries SET
				entry_count = entry_count + 1,
				delivered_batch_count = delivered_batch_count + CASE WHEN $3 THEN 1 ELSE 0 END,
				last_attempt_at = $7,
				lease_expires_at = greatest(lease_expires_at, now() + $8::interval)
			WHERE outlet_id = $1 AND lease_holder = $2
			RETURNING entry_count, company_id),
		kept AS (
			UPDATE outlet_parked SET attempts = attempts + 1, redeliver = false, last_http_status = $11, last_fail_reason = $13
			WHERE outlet_id = $1 AND id = $6 AND NOT $3 AND EXISTS (SELECT FROM s)),
		done AS (
			DELETE FROM outlet_parked WHERE outlet_id = $1 AND id = $6 AND $3 AND EXISTS (SELECT FROM s))
		`+insertLogEntry,
		o.outletID, d.cfg.Holder, ok, e.FirstMessageNumber, e.BatchSize, parkedID, e.Date, d.cfg.LeaseTTL,
		e.BatchNumber, e.Status, e.HTTPStatus, e.RequestTimeMS, e.FailReason, e.HTTPRequestAvailable,
		o.datasync, e.AfterUpdate, raw.key, raw.request, raw.reply).Scan(&n)
	if errors.Is(err, pgx.ErrNoRows) {
		return errLeaseLost
	}
	return err
}
