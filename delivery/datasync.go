package delivery

import (
	"bytes"
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/clientele/clientele/domain/datatarget"
)

// datasyncQueues are the queues of datasync datatargets: the datasync
// projection's, the campaign_stats projection's for campaigns and the
// segment_members projection's for segments (a datatarget's messages are
// in one of them).
const datasyncQueues = `(SELECT * FROM datasync_messages UNION ALL SELECT * FROM campaign_sync_messages
	UNION ALL SELECT * FROM segment_sync_messages) AS m`

// fetchDatasync reads up to limit messages of a datasync datatarget
// numbered above after, in order, each with the update_id of the message
// before it: a log entry's after_update is that of its batch's first
// message. The message numbered after is read too, for its update_id, and
// dropped.
func (d *Deliverer) fetchDatasync(ctx context.Context, datatargetID string, after int64, limit int) ([]message, error) {
	rows, err := d.cfg.Pool.Query(ctx, `SELECT number, body, update_id FROM `+datasyncQueues+`
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

// batchForgotten reports, in tx, whether a message of a datasync outlet's
// batch was anonymised (its person forgotten) after the worker read it;
// the attempt's raw texts must then not be kept. The datasync projection
// erases the texts of the entries it can see when it forgets, and this
// entry is written after it may have looked: the shared advisory lock
// orders the two (see datatarget.ForgetLockClass). Either the projection
// committed its rewrite before this transaction took the lock, and the
// comparison sees it, or it takes the lock after this transaction
// committed the entry, and erases it.
func batchForgotten(ctx context.Context, tx pgx.Tx, o outletRef, batch []message) (bool, error) {
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock_shared($1, hashtext($2))`, datatarget.ForgetLockClass, o.datatargetID); err != nil {
		return false, fmt.Errorf("delivery: outlet %s: forget check: %w", o.outletID, err)
	}
	rows, err := tx.Query(ctx, `SELECT body FROM `+datasyncQueues+`
		WHERE datatarget_id = $1 AND number BETWEEN $2 AND $3 ORDER BY number`,
		o.datatargetID, batch[0].number, batch[len(batch)-1].number)
	if err != nil {
		return false, fmt.Errorf("delivery: outlet %s: forget check: %w", o.outletID, err)
	}
	now, err := pgx.CollectRows(rows, pgx.RowTo[[]byte])
	if err != nil {
		return false, fmt.Errorf("delivery: outlet %s: forget check: %w", o.outletID, err)
	}
	if len(now) != len(batch) {
		return true, nil
	}
	for i := range now {
		if !bytes.Equal(now[i], batch[i].body) {
			return true, nil
		}
	}
	return false, nil
}
