package imports

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/clientele/clientele/internal/crypto"
)

// Store keeps import runs, their staged chunks and their rejections in
// PostgreSQL (tables import_runs, import_chunks, import_rejections).
type Store struct {
	pool *pgxpool.Pool
	keys *crypto.Keyring // seals staged chunks (chunk_seal.go)
}

// NewStore returns the store on pool; keys seals and opens the staged
// chunks.
func NewStore(pool *pgxpool.Pool, keys crypto.KeyStore) *Store {
	if pool == nil || keys.Keyring == nil {
		panic("imports: NewStore: nil pool or keyring")
	}
	return &Store{pool: pool, keys: keys.Keyring}
}

// FailRun marks the run failed with reason, a message for the client, and
// deletes the payloads of its chunks not yet processed: they will never
// be, and they may hold personal data. The run's remaining messages then
// find their chunks done.
func (s *Store) FailRun(ctx context.Context, runID, reason string) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `UPDATE import_runs SET state = 'failed', failure = $2,
				started_at = COALESCE(started_at, now()), finished_at = clock_timestamp(), updated_at = clock_timestamp()
			WHERE id = $1 AND state IN ('scheduled', 'running')`, runID, reason); err != nil {
			return fmt.Errorf("imports: fail run %s: %w", runID, err)
		}
		if _, err := tx.Exec(ctx, `UPDATE import_chunks SET payload = NULL, processed_at = clock_timestamp()
			WHERE run_id = $1 AND processed_at IS NULL`, runID); err != nil {
			return fmt.Errorf("imports: fail run %s: %w", runID, err)
		}
		if _, err := tx.Exec(ctx, forgetRunKey, runID); err != nil {
			return fmt.Errorf("imports: fail run %s: %w", runID, err)
		}
		return nil
	})
}

// CleanUp deletes the runs still receiving that staged nothing since
// before, and their chunks: uploads cut short by a crash. Their clients
// never got a run id. It returns the number of runs deleted.
func (s *Store) CleanUp(ctx context.Context, before time.Time) (int, error) {
	rows, err := s.pool.Query(ctx, `WITH runs AS (
			DELETE FROM import_runs WHERE state = 'receiving' AND updated_at < $1 RETURNING id),
		chunks AS (DELETE FROM import_chunks WHERE run_id IN (SELECT id FROM runs))
		SELECT id FROM runs`, before)
	if err != nil {
		return 0, fmt.Errorf("imports: clean up: %w", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return 0, fmt.Errorf("imports: clean up: %w", err)
	}
	return len(ids), nil
}
