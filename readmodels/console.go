package readmodels

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/clientele/clientele/domain/access"
)

// Queries the console's pages read beside the API's own (package
// console): what the API answers one resource at a time, summed up for a
// page.

// ImportDay sums the import runs created on one day.
type ImportDay struct {
	// Day is the day's midnight in the company's time zone.
	Day                      time.Time
	Runs, Accepted, Rejected int64
}

// ImportDays sums the company's import runs per day of loc, from the day
// of since on, oldest first; days without runs are left out. Runs still
// receiving their upload are left out, as Runs leaves them out.
func (q *Imports) ImportDays(ctx context.Context, companyID string, since time.Time, loc *time.Location) ([]ImportDay, error) {
	if loc == nil {
		loc = time.UTC
	}
	y, m, d := since.In(loc).Date()
	start := time.Date(y, m, d, 0, 0, 0, 0, loc)
	// Run ids are UUIDv7 in hex, led by the millisecond of their creation
	// (commands.NewID): the lower bound of the ids is an index range of
	// import_runs_company rather than a scan of every run of the company.
	lower := fmt.Sprintf("%012x", start.UnixMilli()-1)
	rows, err := q.db.Query(ctx, `SELECT date_trunc('day', created_at AT TIME ZONE $3) AS day,
			count(*), coalesce(sum(accepted), 0), coalesce(sum(rejected), 0)
		FROM import_runs WHERE company_id = $1 AND id >= $2 AND created_at >= $4 AND state <> 'receiving'
		GROUP BY day ORDER BY day`, companyID, lower, loc.String(), start)
	if err != nil {
		return nil, fmt.Errorf("readmodels: import days: %w", err)
	}
	days, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (ImportDay, error) {
		var d ImportDay
		var day time.Time
		err := row.Scan(&day, &d.Runs, &d.Accepted, &d.Rejected)
		// The day comes back as a timestamp without time zone, read as
		// UTC: its fields are the date in loc.
		d.Day = time.Date(day.Year(), day.Month(), day.Day(), 0, 0, 0, 0, loc)
		return d, err
	})
	if err != nil {
		return nil, fmt.Errorf("readmodels: import days: %w", err)
	}
	return days, nil
}

// OutletState is how an outlet's delivery goes: the delivery workers'
// row (outlet_deliveries) beside the outlet's own.
type OutletState struct {
	CompanyID, DatatargetID, OutletID string
	Enabled                           bool
	// DisabledReason says why an outlet was disabled ("" when enabled).
	DisabledReason string
	// FailedAttempts counts the failed attempts of the batch being
	// retried; 0 when the last attempt succeeded (or none was made).
	FailedAttempts int
	// PendingSize is the size of that batch.
	PendingSize int
	// LastAttemptAt and NextAttemptAt are zero when there is none.
	LastAttemptAt, NextAttemptAt time.Time
	// Entries is the number of attempts in the outlet's log.
	Entries int64
}

// Failing reports whether the outlet is not delivering now: its batch is
// being retried after a failure, or it was disabled.
func (s OutletState) Failing() bool { return s.FailedAttempts > 0 || !s.Enabled }

const selectOutletState = `SELECT o.company_id, o.datatarget_id, o.id, o.enabled, o.disabled_reason,
	coalesce(s.failed_attempts, 0), coalesce(s.pending_size, 0),
	coalesce(nullif(s.last_attempt_at, '-infinity'), 'epoch'), coalesce(nullif(s.next_attempt_at, '-infinity'), 'epoch'),
	coalesce(s.entry_count, 0)
	FROM datatarget_outlets o LEFT JOIN outlet_deliveries s ON s.outlet_id = o.id `

// OutletStates returns the states of a datatarget's outlets, oldest
// first.
func (q *Datatargets) OutletStates(ctx context.Context, companyID, datatargetID string) ([]OutletState, error) {
	return q.outletStates(ctx, `WHERE o.company_id = $1 AND o.datatarget_id = $2 ORDER BY o.id`, companyID, datatargetID)
}

// FailingOutlets returns the company's outlets that are not delivering
// now (OutletState.Failing), oldest first.
func (q *Datatargets) FailingOutlets(ctx context.Context, companyID string) ([]OutletState, error) {
	return q.outletStates(ctx, `WHERE o.company_id = $1 AND (NOT o.enabled OR s.failed_attempts > 0) ORDER BY o.id`, companyID)
}

func (q *Datatargets) outletStates(ctx context.Context, where string, args ...any) ([]OutletState, error) {
	rows, err := q.db.Query(ctx, selectOutletState+where, args...)
	if err != nil {
		return nil, fmt.Errorf("readmodels: outlet states: %w", err)
	}
	epoch := time.Unix(0, 0).UTC()
	list, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (OutletState, error) {
		var s OutletState
		err := row.Scan(&s.CompanyID, &s.DatatargetID, &s.OutletID, &s.Enabled, &s.DisabledReason,
			&s.FailedAttempts, &s.PendingSize, &s.LastAttemptAt, &s.NextAttemptAt, &s.Entries)
		for _, t := range []*time.Time{&s.LastAttemptAt, &s.NextAttemptAt} {
			if *t = t.UTC(); t.Equal(epoch) {
				*t = time.Time{}
			}
		}
		return s, err
	})
	if err != nil {
		return nil, fmt.Errorf("readmodels: outlet states: %w", err)
	}
	return list, nil
}

// AccessTokens returns the company's access tokens (never their values),
// oldest first. It is the API's query too: GET /api/access-tokens/ and
// the console's access page both list through it, keeping the tokens
// their reader may see (access.VisibleAccessTokens).
func (q *Access) AccessTokens(ctx context.Context, companyID string) ([]access.AccessToken, error) {
	rows, err := q.db.Query(ctx, selectToken+`WHERE t.company_id = $1 ORDER BY t.created_at, t.id`, companyID)
	if err != nil {
		return nil, fmt.Errorf("readmodels: access tokens: %w", err)
	}
	list, err := pgx.CollectRows(rows, scanToken)
	if err != nil {
		return nil, fmt.Errorf("readmodels: access tokens: %w", err)
	}
	return list, nil
}
