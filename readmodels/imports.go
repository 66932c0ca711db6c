package readmodels

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/clientele/clientele/domain"
	"github.com/clientele/clientele/domain/importing"
)

// ImportRun is an import run as its company sees it.
type ImportRun struct {
	ID        string
	CompanyID string
	Entity    importing.Entity
	State     importing.State
	// Source is where the upload came from: "api" (any HTTP upload, JSON
	// or CSV), "sftp" or "cli".
	Source string
	// Received is the number of records uploaded; Accepted and Rejected
	// grow as chunks are processed.
	Received, Accepted, Rejected int64
	// Failure says why a failed run failed.
	Failure string
	// CreatedAt is when the upload began; StartedAt when its first chunk
	// was taken up; FinishedAt when it completed or failed.
	CreatedAt             time.Time
	StartedAt, FinishedAt *time.Time
	// Warnings are the fields the run's imported records carried that
	// are no fields of the entity, ignored, ordered by FirstIndex then
	// Field; at most importing.MaxWarnings.
	Warnings []importing.Warning
}

// Imports reads import runs, their rejections and their warnings (kept
// by the import worker in import_runs, import_rejections and
// import_warnings).
type Imports struct {
	db database
}

// NewImports returns the queries on pool.
func NewImports(pool *pgxpool.Pool) *Imports {
	if pool == nil {
		panic("readmodels: NewImports: nil pool")
	}
	return &Imports{db: database{pool}}
}

// Run returns a run of the company. A run of another company, and one
// still receiving its upload (whose id no client has been given), is
// NotFound.
func (q *Imports) Run(ctx context.Context, companyID, runID string) (ImportRun, error) {
	var r ImportRun
	err := q.db.QueryRow(ctx, `SELECT id, company_id, entity, state, source, received, accepted, rejected,
			COALESCE(failure, ''), created_at, started_at, finished_at
		FROM import_runs WHERE id = $1 AND company_id = $2 AND state <> 'receiving'`, runID, companyID).Scan(
		&r.ID, &r.CompanyID, &r.Entity, &r.State, &r.Source, &r.Received, &r.Accepted, &r.Rejected,
		&r.Failure, &r.CreatedAt, &r.StartedAt, &r.FinishedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return ImportRun{}, domain.Errorf(domain.NotFound, "no such import run")
	}
	if err != nil {
		return ImportRun{}, fmt.Errorf("readmodels: import run: %w", err)
	}
	r.CreatedAt = r.CreatedAt.UTC()
	for _, t := range []*time.Time{r.StartedAt, r.FinishedAt} {
		if t != nil {
			*t = t.UTC()
		}
	}
	// A run lists at most importing.MaxWarnings: no paging needed.
	rows, err := q.db.Query(ctx, `SELECT field, count, first_index FROM import_warnings
		WHERE run_id = $1 ORDER BY first_index, field`, r.ID)
	if err != nil {
		return ImportRun{}, fmt.Errorf("readmodels: import run warnings: %w", err)
	}
	r.Warnings, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (importing.Warning, error) {
		var w importing.Warning
		return w, row.Scan(&w.Field, &w.Count, &w.FirstIndex)
	})
	if err != nil {
		return ImportRun{}, fmt.Errorf("readmodels: import run warnings: %w", err)
	}
	return r, nil
}

// Rejections returns up to limit rejections of the run, in upload order,
// after the cursor after ("" for the first page), and the cursor of the
// next page ("" when this is the last). Check the run's company with Run
// first.
func (q *Imports) Rejections(ctx context.Context, runID, after string, limit int) ([]importing.Rejection, string, error) {
	if limit < 1 || limit > MaxLimit {
		return nil, "", fmt.Errorf("readmodels: rejections: limit %d out of 1..%d", limit, MaxLimit)
	}
	idx, ord := int64(-1), int32(0)
	if after != "" {
		var err error
		if idx, ord, err = parseRejectionCursor(after); err != nil {
			return nil, "", err
		}
	}
	rows, err := q.db.Query(ctx, `SELECT record_index, ord, reason, field FROM import_rejections
		WHERE run_id = $1 AND (record_index, ord) > ($2, $3)
		ORDER BY record_index, ord LIMIT $4`, runID, idx, ord, limit+1)
	if err != nil {
		return nil, "", fmt.Errorf("readmodels: rejections: %w", err)
	}
	var out []importing.Rejection
	var last string
	for rows.Next() {
		var r importing.Rejection
		var o int32
		if err := rows.Scan(&r.Index, &o, &r.Reason, &r.Field); err != nil {
			rows.Close()
			return nil, "", fmt.Errorf("readmodels: rejections: %w", err)
		}
		if len(out) == limit {
			rows.Close()
			return out, last, nil
		}
		out = append(out, r)
		last = fmt.Sprintf("%d.%d", r.Index, o)
	}
	if err := rows.Err(); err != nil {
		return nil, "", fmt.Errorf("readmodels: rejections: %w", err)
	}
	return out, "", nil
}

func parseRejectionCursor(s string) (int64, int32, error) {
	a, b, ok := strings.Cut(s, ".")
	idx, err1 := strconv.ParseInt(a, 10, 64)
	ord, err2 := strconv.ParseInt(b, 10, 32)
	if !ok || err1 != nil || err2 != nil || idx < 0 || ord < 0 {
		return 0, 0, domain.Errorf(domain.Invalid, "the cursor is not one of this run's; follow next_url")
	}
	return idx, int32(ord), nil
}
