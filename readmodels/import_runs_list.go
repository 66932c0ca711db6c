package readmodels

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// Runs returns up to limit runs of the company, newest first, whose ids
// are below before ("" for the first page), and the cursor of the next
// page ("" on the last). Runs still receiving their upload are left out,
// as Run leaves them out; warnings are not read (Run reads them).
// GET /api/imports/ and the console's imports page both list through it.
func (q *Imports) Runs(ctx context.Context, companyID, before string, limit int) ([]ImportRun, string, error) {
	if limit < 1 || limit > MaxLimit {
		return nil, "", fmt.Errorf("readmodels: import runs: limit %d out of 1..%d", limit, MaxLimit)
	}
	// Ids are UUIDv7 in hex: their text order is creation order, and no
	// id sorts above "g".
	if before == "" {
		before = "g"
	}
	rows, err := q.db.Query(ctx, `SELECT id, company_id, entity, state, source, received, accepted, rejected,
			COALESCE(failure, ''), created_at, started_at, finished_at
		FROM import_runs WHERE company_id = $1 AND id < $2 AND state <> 'receiving'
		ORDER BY id DESC LIMIT $3`, companyID, before, limit+1)
	if err != nil {
		return nil, "", fmt.Errorf("readmodels: import runs: %w", err)
	}
	runs, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (ImportRun, error) {
		var r ImportRun
		err := row.Scan(&r.ID, &r.CompanyID, &r.Entity, &r.State, &r.Source, &r.Received, &r.Accepted, &r.Rejected,
			&r.Failure, &r.CreatedAt, &r.StartedAt, &r.FinishedAt)
		r.CreatedAt = r.CreatedAt.UTC()
		for _, t := range []*time.Time{r.StartedAt, r.FinishedAt} {
			if t != nil {
				*t = t.UTC()
			}
		}
		return r, err
	})
	if err != nil {
		return nil, "", fmt.Errorf("readmodels: import runs: %w", err)
	}
	if len(runs) > limit {
		return runs[:limit], runs[limit-1].ID, nil
	}
	return runs, "", nil
}
