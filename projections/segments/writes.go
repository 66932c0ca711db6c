package segments

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// rowWriter holds entries and exits, decided by a backfill or for the
// customers a commit touches, the timers they move, and the customers
// whose timers go (noTimer).
type rowWriter struct {
	company  string
	changes  []change
	timerIDs []string
	timerDue []time.Time
	noTimer  []string
}

// write records the entries and exits (the new rows of segment_members
// and segment_history with COPY, in the order decided: no JSON to encode
// nor to parse) and moves the timers.
func (w *rowWriter) write(ctx context.Context, tx pgx.Tx) error {
	var exitSeg, exitCust []string
	var entries, history [][]any
	for _, c := range w.changes {
		if c.Member {
			entries = append(entries, []any{c.CompanyID, c.SegmentKey, c.CustomerID, c.At})
		} else {
			exitSeg, exitCust = append(exitSeg, c.SegmentKey), append(exitCust, c.CustomerID)
		}
		history = append(history, []any{c.CompanyID, c.SegmentKey, c.CustomerID, c.Member, c.At, c.Cause})
	}
	// The statements in one round trip, then the copies. No row is both
	// deleted and inserted: a customer enters or leaves a segment once.
	var b pgx.Batch
	if len(exitSeg) > 0 {
		b.Queue(`DELETE FROM segment_members m USING unnest($2::text[], $3::text[]) AS x(segment_key, customer_id)
			WHERE m.company_id = $1 AND m.segment_key = x.segment_key AND m.customer_id = x.customer_id`,
			w.company, exitSeg, exitCust)
	}
	if len(w.noTimer) > 0 {
		b.Queue(`DELETE FROM segment_timers WHERE company_id = $1 AND customer_id = ANY($2)`, w.company, w.noTimer)
	}
	if len(w.timerIDs) > 0 {
		b.Queue(`INSERT INTO segment_timers (company_id, customer_id, due_at)
			SELECT $1, customer_id, due_at FROM unnest($2::text[], $3::timestamptz[]) AS t(customer_id, due_at)
			ON CONFLICT (company_id, customer_id) DO UPDATE SET due_at = excluded.due_at`,
			w.company, w.timerIDs, w.timerDue)
	}
	if b.Len() > 0 {
		if err := tx.SendBatch(ctx, &b).Close(); err != nil {
			return err
		}
	}
	if len(entries) > 0 {
		if _, err := tx.CopyFrom(ctx, pgx.Identifier{"segment_members"},
			[]string{"company_id", "segment_key", "customer_id", "entered_at"}, pgx.CopyFromRows(entries)); err != nil {
			return err
		}
	}
	if len(history) > 0 {
		if _, err := tx.CopyFrom(ctx, pgx.Identifier{"segment_history"},
			[]string{"company_id", "segment_key", "customer_id", "member", "at", "cause"}, pgx.CopyFromRows(history)); err != nil {
			return err
		}
	}
	return nil
}
