package delivery

import (
	"bytes"
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/clientele/clientele/domain/datatarget"
)

// fetchDatasync reads up to limit messages of a datasync datatarget
// numbered above after, in order, each with the update_id of the message
// before it: a log entry's after_update is that of its batch's first
// message. The message numbered after is read too, for its update_id, and
// dropped.
func (d *Deliverer) fetchDatasync(ctx context.Context, datatargetID string, after int64, limit int) ([]message, error) {
	rows, err := d.cfg.Pool.Query(ctx, `SELECT number, body, update_id FROM datasync_messages
		WHERE datatarget_id = $1 AND number >= $2 ORDER BY number LIMIT $3`, datatargetID, after, limit+1)
	if err != nil {
		return nil, err
	}
	var out []message
	var prev string
	var m message
	var updateID string
	_, err = pgx.ForEachRow(rows, []any{&m.number, &m.body, &updateID}, func() error {
		if m.number > after {
			out = append(out, message{number: m.number, body: m.body, afterUpdate: prev})
		}
		prev = updateID
		return nil
	})
	if len(out) > limit {
		out = out[:limit]
	}
	return out, err
}

// recheck erases the raw texts of a datasync outlet's entry when a message
// of its batch was anonymised (its person forgotten) after the worker read
// it: the datasync projection erases only the entries it can see, and this
// one may have been written after it looked. The shared advisory lock
// orders the two (see datatarget.ForgetLockClass): the projection either
// saw the entry or has committed the rewrite that this read sees.
func (d *Deliverer) recheck(ctx context.Context, o outletRef, entry int64, batch []message) error {
	return pgx.BeginFunc(ctx, d.cfg.Pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock_shared($1, hashtext($2))`, datatarget.ForgetLockClass, o.datatargetID); err != nil {
			return fmt.Errorf("delivery: outlet %s: recheck: %w", o.outletID, err)
		}
		rows, err := tx.Query(ctx, `SELECT body FROM datasync_messages
			WHERE datatarget_id = $1 AND number BETWEEN $2 AND $3 ORDER BY number`,
			o.datatargetID, batch[0].number, batch[len(batch)-1].number)
		if err != nil {
			return fmt.Errorf("delivery: outlet %s: recheck: %w", o.outletID, err)
		}
		now, err := pgx.CollectRows(rows, pgx.RowTo[[]byte])
		if err != nil {
			return fmt.Errorf("delivery: outlet %s: recheck: %w", o.outletID, err)
		}
		same := len(now) == len(batch)
		for i := 0; same && i < len(now); i++ {
			same = bytes.Equal(now[i], batch[i].body)
		}
		if same {
			return nil
		}
		_, err = tx.Exec(ctx, `UPDATE outlet_log SET http_request = '', http_reply = '', http_request_available = false
			WHERE outlet_id = $1 AND entry_number = $2`, o.outletID, entry)
		return err
	})
}
