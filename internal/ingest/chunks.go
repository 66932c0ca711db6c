package ingest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/clientele/clientele/domain/importing"
)

// Chunk is a staged chunk as the worker reads it, with what it needs of
// its run.
type Chunk struct {
	RunID string
	Seq   int
	// FirstIndex is the index in the upload of Records[0].
	FirstIndex int
	Records    []json.RawMessage

	CompanyID                    string
	Entity                       importing.Entity
	Actor, Source, CorrelationID string
	// MayDestroy is the run's Run.MayDestroy.
	MayDestroy bool
	// Done is true when the chunk needs no work: it was processed already
	// (its message is a redelivery) or its run failed.
	Done bool
	// Failures counts the earlier attempts that failed for a reason
	// retrying does not cure (RecordFailure).
	Failures int
}

// LockChunk reads the chunk and locks it until tx ends, so that a chunk
// delivered twice at once is applied once: the second transaction waits,
// then finds it done. ok is false when the chunk does not exist.
func (s *Store) LockChunk(ctx context.Context, tx pgx.Tx, runID string, seq int) (c Chunk, ok bool, err error) {
	var payload []byte
	var processed *time.Time
	var state importing.State
	err = tx.QueryRow(ctx, `SELECT c.first_index, c.payload, c.processed_at, c.failures,
			r.company_id, r.entity, r.state, r.actor, r.source, r.correlation_id, r.may_destroy
		FROM import_chunks c JOIN import_runs r ON r.id = c.run_id
		WHERE c.run_id = $1 AND c.seq = $2
		FOR UPDATE OF c`, runID, seq).Scan(&c.FirstIndex, &payload, &processed, &c.Failures,
		&c.CompanyID, &c.Entity, &state, &c.Actor, &c.Source, &c.CorrelationID, &c.MayDestroy)
	if errors.Is(err, pgx.ErrNoRows) {
		return Chunk{}, false, nil
	}
	if err != nil {
		return Chunk{}, false, fmt.Errorf("ingest: lock chunk %d of run %s: %w", seq, runID, err)
	}
	c.RunID, c.Seq = runID, seq
	c.Done = processed != nil || payload == nil || state == importing.Failed
	if !c.Done {
		c.Records = splitRecords(payload)
	}
	return c, true, nil
}

// PeekChunk reads the records of a chunk that is still to be processed,
// without locking it; ok is false when there is no such chunk. A staged
// payload never changes until it is processed (then it is deleted), so
// what PeekChunk reads is what LockChunk will.
func (s *Store) PeekChunk(ctx context.Context, runID string, seq int) (records []json.RawMessage, ok bool, err error) {
	var payload []byte
	err = s.pool.QueryRow(ctx, `SELECT payload FROM import_chunks
		WHERE run_id = $1 AND seq = $2 AND processed_at IS NULL AND payload IS NOT NULL`, runID, seq).Scan(&payload)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("ingest: peek chunk %d of run %s: %w", seq, runID, err)
	}
	return splitRecords(payload), true, nil
}

// splitRecords splits a payload into its records, without copying: each
// record is one line.
func splitRecords(payload []byte) []json.RawMessage {
	out := make([]json.RawMessage, 0, bytes.Count(payload, []byte{'\n'}))
	for len(payload) > 0 {
		i := bytes.IndexByte(payload, '\n')
		if i < 0 {
			i = len(payload)
		}
		out = append(out, json.RawMessage(payload[:i:i]))
		payload = payload[min(i+1, len(payload)):]
	}
	return out
}

// RecordFailure notes that an attempt at chunk seq of run failed for a
// reason retrying does not cure, and returns the number of such failures
// (0 when the chunk is no longer pending). reason is stored: it must not
// quote record values. It runs in a transaction of its own, since the
// attempt's was rolled back.
func (s *Store) RecordFailure(ctx context.Context, runID string, seq int, reason string) (int, error) {
	var n int
	err := s.pool.QueryRow(ctx, `UPDATE import_chunks
		SET failures = failures + 1, last_failure = $3, failed_at = clock_timestamp()
		WHERE run_id = $1 AND seq = $2 AND processed_at IS NULL
		RETURNING failures`, runID, seq, reason).Scan(&n)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("ingest: record a failure of chunk %d of run %s: %w", seq, runID, err)
	}
	return n, nil
}

// FinishChunk records in tx what the Importer made of the chunk: its
// rejections, the run's counts and state (running, or completed with its
// last chunk), and deletes the chunk's payload. rejected is the number of
// distinct records rejected.
func (s *Store) FinishChunk(ctx context.Context, tx pgx.Tx, c Chunk, accepted, rejected int, rejections []importing.Rejection) error {
	b := &pgx.Batch{}
	if len(rejections) > 0 {
		idx := make([]int64, len(rejections))
		ord := make([]int32, len(rejections))
		reasons := make([]string, len(rejections))
		fields := make([]string, len(rejections))
		seen := map[int]int32{}
		for i, r := range rejections {
			idx[i], ord[i], reasons[i], fields[i] = int64(r.Index), seen[r.Index], r.Reason, r.Field
			seen[r.Index]++
		}
		b.Queue(`INSERT INTO import_rejections (run_id, record_index, ord, reason, field)
			SELECT $1, i, o, r, f FROM unnest($2::bigint[], $3::int[], $4::text[], $5::text[]) AS u(i, o, r, f)`,
			c.RunID, idx, ord, reasons, fields)
	}
	b.Queue(`UPDATE import_chunks SET payload = NULL, processed_at = clock_timestamp(), accepted = $3, rejected = $4
		WHERE run_id = $1 AND seq = $2`, c.RunID, c.Seq, accepted, rejected)
	// started_at is the start of the first chunk's transaction (now()),
	// finished_at the end of the last one's work (clock_timestamp()).
	b.Queue(`UPDATE import_runs SET accepted = accepted + $2, rejected = rejected + $3,
			chunks_done = chunks_done + 1, updated_at = clock_timestamp(),
			started_at = COALESCE(started_at, now()),
			state = CASE WHEN chunks_done + 1 >= chunks THEN 'completed' ELSE 'running' END,
			finished_at = CASE WHEN chunks_done + 1 >= chunks THEN clock_timestamp() END
		WHERE id = $1`, c.RunID, accepted, rejected)
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return fmt.Errorf("ingest: finish chunk %d of run %s: %w", c.Seq, c.RunID, err)
	}
	return nil
}
