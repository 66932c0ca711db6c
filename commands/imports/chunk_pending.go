package imports

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// uploadOrder orders the pending chunks (c) of runs (r) of a company in
// upload order: by the runs' scheduling transactions, then the chunks.
const uploadOrder = `r.scheduled_tx NULLS FIRST, r.created_at, r.id, c.seq`

// NextPending returns the company's first chunk not applied yet, in
// upload order (the order of the runs' scheduling transactions, then the
// chunks' order), and false when every chunk of the company is applied.
func (s *Store) NextPending(ctx context.Context, companyID string) (ImportChunk, bool, error) {
	var c ImportChunk
	// Upload order is the order the chunk messages are delivered in: by
	// scheduling transaction, among those that every reader sees
	// committed (below pg_snapshot_xmin, as watermill-sql reads), so that a
	// later upload whose transaction committed first never goes before an
	// earlier one still committing. A run without scheduled_tx (none is
	// left after the migration that added it) goes first.
	err := s.pool.QueryRow(ctx, `SELECT c.run_id, c.seq FROM import_runs r
		JOIN import_chunks c ON c.run_id = r.id AND c.processed_at IS NULL
		WHERE r.company_id = $1 AND r.state IN ('scheduled', 'running')
		  AND (r.scheduled_tx IS NULL OR r.scheduled_tx < pg_snapshot_xmin(pg_current_snapshot()))
		ORDER BY `+uploadOrder+` LIMIT 1`, companyID).Scan(&c.RunID, &c.Seq)
	if errors.Is(err, pgx.ErrNoRows) {
		return ImportChunk{}, false, nil
	}
	if err != nil {
		return ImportChunk{}, false, fmt.Errorf("imports: next pending chunk: %w", err)
	}
	return c, true, nil
}

// StoodStill is a company's next chunk to apply, when the company's
// imports have not moved for a while: what an operator looks at first.
type StoodStill struct {
	CompanyID string
	RunID     string
	Entity    string
	Seq       int
	// Since is when the company's imports last moved.
	Since time.Time
	// Failures counts the chunk's attempts that failed for a reason
	// retrying does not cure; LastFailure is the last one's reason.
	Failures    int
	LastFailure string
}

// StoodStill returns, for every company whose imports have chunks to
// apply and have not moved for still (by the database's clock): where the
// deliveries of a chunk gave up. Each comes with its next chunk in upload
// order, the one that holds the others back.
func (s *Store) StoodStill(ctx context.Context, still time.Duration) ([]StoodStill, error) {
	rows, err := s.pool.Query(ctx, `WITH stalled AS (
			SELECT company_id, max(updated_at) AS since FROM import_runs
			WHERE state IN ('scheduled', 'running')
			GROUP BY company_id HAVING max(updated_at) < now() - $1::interval)
		SELECT DISTINCT ON (r.company_id) r.company_id, r.id, r.entity, c.seq, st.since, c.failures, COALESCE(c.last_failure, '')
		FROM stalled st
		JOIN import_runs r ON r.company_id = st.company_id AND r.state IN ('scheduled', 'running')
		JOIN import_chunks c ON c.run_id = r.id AND c.processed_at IS NULL
		ORDER BY r.company_id, `+uploadOrder, still)
	if err != nil {
		return nil, fmt.Errorf("imports: imports that stood still: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (StoodStill, error) {
		var c StoodStill
		err := row.Scan(&c.CompanyID, &c.RunID, &c.Entity, &c.Seq, &c.Since, &c.Failures, &c.LastFailure)
		return c, err
	})
	if err != nil {
		return nil, fmt.Errorf("imports: imports that stood still: %w", err)
	}
	return out, nil
}

// Pending reports whether chunk c is still to be applied: not processed,
// and its run neither failed nor completed.
func (s *Store) Pending(ctx context.Context, c ImportChunk) (bool, error) {
	var pending bool
	err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM import_chunks ch JOIN import_runs r ON r.id = ch.run_id
		WHERE ch.run_id = $1 AND ch.seq = $2 AND ch.processed_at IS NULL AND r.state IN ('scheduled', 'running'))`,
		c.RunID, c.Seq).Scan(&pending)
	if err != nil {
		return false, fmt.Errorf("imports: chunk %d of run %s: %w", c.Seq, c.RunID, err)
	}
	return pending, nil
}
