package segments

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/clientele/clientele/eventstore"
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
// projector's lock, so never beside an Apply. A company with a commit
// dated before a timer's instant still to be applied keeps its timers
// for a later call: the commit fires them first when it touches their
// customers, and the facts of the others do not change. It returns how
// many fired.
func (m *Members) FireTimers(ctx context.Context, db Beginner, now time.Time) (int, error) {
	fired := 0
	for {
		n, full, err := m.fireBatch(ctx, db, now)
		fired += n
		if err != nil || !full {
			return fired, err
		}
	}
}

// pending reports whether a commit of the company that the projector
// reads, dated by at, is in the log after the last one it applied.
func (m *Members) pending(ctx context.Context, tx pgx.Tx, company string, at time.Time) (bool, error) {
	var after eventstore.Position
	var applied int64
	err := tx.QueryRow(ctx, `SELECT applied_tx, applied_global FROM segment_clock WHERE company_id = $1`, company).Scan(&applied, &after.Global)
	if err != nil && err != pgx.ErrNoRows {
		return false, err
	}
	after.TxID = uint64(applied)
	next, err := m.log.ReadCompanyTypes(ctx, tx, company, memberTypes(), after,
		eventstore.Position{TxID: math.MaxInt64, Global: math.MaxInt64}, 1)
	if err != nil {
		return false, err
	}
	return len(next) > 0 && !next[0].RecordedAt.After(at), nil
}

func (m *Members) fireBatch(ctx context.Context, db Beginner, now time.Time) (int, bool, error) {
	tx, err := db.Begin(ctx)
	if err != nil {
		return 0, false, err
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if err := lock(ctx, tx); err != nil {
		return 0, false, err
	}
	rows, err := tx.Query(ctx, `SELECT company_id, customer_id, due_at FROM segment_timers WHERE due_at <= $1
		ORDER BY due_at, company_id, customer_id LIMIT $2`, now, timerBatch)
	if err != nil {
		return 0, false, err
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
		return 0, false, err
	}
	fired := 0
	waiting := map[string]bool{}
	for _, d := range list {
		if waiting[d.company] {
			continue
		}
		if wait, err := m.pending(ctx, tx, d.company, d.at); err != nil || wait {
			waiting[d.company] = true
			if err != nil {
				return 0, false, err
			}
			continue
		}
		if err := tick(ctx, tx, d.company, d.at.UTC()); err != nil {
			return 0, false, err
		}
		if err := evaluate(ctx, tx, d.company, nil, []string{d.id}, nil, func(string) time.Time { return d.at.UTC() },
			func(string) string { return CauseTime }); err != nil {
			return 0, false, fmt.Errorf("projections: segment_members: timer of %s/%s: %w", d.company, d.id, err)
		}
		fired++
	}
	return fired, len(list) == timerBatch && fired > 0, tx.Commit(ctx)
}

// TimerInterval is how often RunTimers looks for due timers: a member
// whose window passes is seen to leave within it (and the 60 seconds the
// service promises).
const TimerInterval = 5 * time.Second

// RunTimers fires due timers every interval until ctx ends; a failure is
// reported to logf and tried again at the next tick. The query reads the
// timers by due_at (an index): no customer is looked at before its
// instant comes.
func (m *Members) RunTimers(ctx context.Context, db Beginner, interval time.Duration, now func() time.Time, logf func(error)) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if _, err := m.FireTimers(ctx, db, now()); err != nil && ctx.Err() == nil {
				logf(err)
			}
		}
	}
}
