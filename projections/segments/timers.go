package segments

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// Beginner opens transactions (a *pgxpool.Pool).
type Beginner interface {
	Begin(ctx context.Context) (pgx.Tx, error)
}

// timerBatch bounds the timers one transaction fires.
const timerBatch = 500

// FireTimers fires the timers due by now, whatever customer they are of:
// each customer is decided again at its due instant (the instant a window
// passed), on the facts the projector holds, and the entries and exits
// are recorded at that instant with the cause "time". It runs under the
// projector's lock, so never beside an Apply. It returns how many fired.
func FireTimers(ctx context.Context, db Beginner, now time.Time) (int, error) {
	fired := 0
	for {
		n, err := fireBatch(ctx, db, now)
		fired += n
		if err != nil || n < timerBatch {
			return fired, err
		}
	}
}

func fireBatch(ctx context.Context, db Beginner, now time.Time) (int, error) {
	tx, err := db.Begin(ctx)
	if err != nil {
		return 0, err
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if err := lock(ctx, tx); err != nil {
		return 0, err
	}
	rows, err := tx.Query(ctx, `SELECT company_id, customer_id, due_at FROM segment_timers WHERE due_at <= $1
		ORDER BY due_at, company_id, customer_id LIMIT $2`, now, timerBatch)
	if err != nil {
		return 0, err
	}
	type due struct {
		company, id string
		at          time.Time
	}
	list, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (due, error) {
		var d due
		return d, r.Scan(&d.company, &d.id, &d.at)
	})
	if err != nil {
		return 0, err
	}
	for _, d := range list {
		if err := tick(ctx, tx, d.company, d.at.UTC()); err != nil {
			return 0, err
		}
		if err := evaluate(ctx, tx, d.company, []string{d.id}, d.at.UTC(), func(string) string { return CauseTime }); err != nil {
			return 0, fmt.Errorf("projections: segment_members: timer of %s/%s: %w", d.company, d.id, err)
		}
	}
	return len(list), tx.Commit(ctx)
}

// TimerInterval is how often RunTimers looks for due timers: a member
// whose window passes is seen to leave within it (and the 60 seconds the
// service promises).
const TimerInterval = 5 * time.Second

// RunTimers fires due timers every interval until ctx ends; a failure is
// reported to logf and tried again at the next tick. The query reads the
// timers by due_at (an index): no customer is looked at before its
// instant comes.
func RunTimers(ctx context.Context, db Beginner, interval time.Duration, now func() time.Time, logf func(error)) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if _, err := FireTimers(ctx, db, now()); err != nil && ctx.Err() == nil {
				logf(err)
			}
		}
	}
}
