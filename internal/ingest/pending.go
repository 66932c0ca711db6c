package ingest

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// ChunkRef names a staged chunk.
type ChunkRef struct {
	RunID string
	Seq   int
}

// NextPending returns the company's first chunk not applied yet, in
// upload order (the order of the runs' scheduling transactions, then the
// chunks' order), and false when every chunk of the company is applied.
func (s *Store) NextPending(ctx context.Context, companyID string) (ChunkRef, bool, error) {
	var c ChunkRef
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
		ORDER BY r.scheduled_tx NULLS FIRST, r.created_at, r.id, c.seq LIMIT 1`, companyID).Scan(&c.RunID, &c.Seq)
	if errors.Is(err, pgx.ErrNoRows) {
		return ChunkRef{}, false, nil
	}
	if err != nil {
		return ChunkRef{}, false, fmt.Errorf("ingest: next pending chunk: %w", err)
	}
	return c, true, nil
}

// StalledCompanies returns the companies that have chunks to apply and
// whose runs have not moved for the given time (by the database's clock):
// where the deliveries of a chunk gave up.
func (s *Store) StalledCompanies(ctx context.Context, still time.Duration) ([]string, error) {
	rows, err := s.pool.Query(ctx, `SELECT company_id FROM import_runs
		WHERE state IN ('scheduled', 'running')
		GROUP BY company_id HAVING max(updated_at) < now() - $1::interval`, still)
	if err != nil {
		return nil, fmt.Errorf("ingest: stalled companies: %w", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("ingest: stalled companies: %w", err)
	}
	return ids, nil
}

// Pending reports whether chunk c is still to be applied: not processed,
// and its run neither failed nor completed.
func (s *Store) Pending(ctx context.Context, c ChunkRef) (bool, error) {
	var pending bool
	err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM import_chunks ch JOIN import_runs r ON r.id = ch.run_id
		WHERE ch.run_id = $1 AND ch.seq = $2 AND ch.processed_at IS NULL AND r.state IN ('scheduled', 'running'))`,
		c.RunID, c.Seq).Scan(&pending)
	if err != nil {
		return false, fmt.Errorf("ingest: chunk %d of run %s: %w", c.Seq, c.RunID, err)
	}
	return pending, nil
}
