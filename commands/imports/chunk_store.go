package imports

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

// stagedChunk is a staged chunk as the worker reads it, with what it needs of
// its run.
type stagedChunk struct {
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
	// Isolation is what earlier attempts found of the records that fail
	// the chunk (RecordIsolation); zero when none looked.
	Isolation Isolation
}

// Isolation is the progress of the search for the records that fail a
// chunk (commands/imports/chunk_isolate.go), kept on the chunk between
// attempts: an attempt searches for a bounded time, in the chunk's
// transaction, and the next one goes on where it stopped.
type Isolation struct {
	// Applies is the number of the chunk's first records found to apply,
	// with Records rejected.
	Applies int `json:"applies"`
	// Records are the records found to fail the chunk, in the order found.
	Records []IsolatedRecord `json:"records"`
}

// IsolatedRecord is a record found to fail its chunk, rejected when the
// chunk applies.
type IsolatedRecord struct {
	// Index is the record's index in the upload.
	Index int `json:"index"`
	// Reason is the rejection's reason, without values.
	Reason string `json:"reason"`
	// Code is the SQLSTATE, when PostgreSQL refused the record.
	Code string `json:"code,omitempty"`
}

// LockChunk reads the chunk and locks it until tx ends, so that a chunk
// delivered twice at once is applied once: the second transaction waits,
// then finds it done. ok is false when the chunk does not exist.
func (s *Store) LockChunk(ctx context.Context, tx pgx.Tx, runID string, seq int) (c stagedChunk, ok bool, err error) {
	var payload []byte
	var processed *time.Time
	var state importing.State
	var isolation *Isolation
	var key []byte
	err = tx.QueryRow(ctx, `SELECT c.first_index, c.payload, c.processed_at, c.failures, c.isolation,
			r.company_id, r.entity, r.state, r.actor, r.source, r.correlation_id, r.may_destroy, k.wrapped
		FROM import_chunks c JOIN import_runs r ON r.id = c.run_id
		LEFT JOIN import_run_keys k ON k.run_id = c.run_id
		WHERE c.run_id = $1 AND c.seq = $2
		FOR UPDATE OF c`, runID, seq).Scan(&c.FirstIndex, &payload, &processed, &c.Failures, &isolation,
		&c.CompanyID, &c.Entity, &state, &c.Actor, &c.Source, &c.CorrelationID, &c.MayDestroy, &key)
	if errors.Is(err, pgx.ErrNoRows) {
		return stagedChunk{}, false, nil
	}
	if err != nil {
		return stagedChunk{}, false, fmt.Errorf("imports: lock chunk %d of run %s: %w", seq, runID, err)
	}
	c.RunID, c.Seq = runID, seq
	if isolation != nil {
		c.Isolation = *isolation
	}
	c.Done = processed != nil || payload == nil || state == importing.Failed
	if !c.Done {
		if payload, err = s.openChunk(key, runID, seq, payload); err != nil {
			return stagedChunk{}, false, err
		}
		c.Records = splitRecords(payload)
	}
	return c, true, nil
}

// PeekChunk reads the records of a chunk that is still to be processed,
// and the index in the upload of the first, without locking it; ok is
// false when there is no such chunk. A staged payload never changes until
// it is processed (then it is deleted), so what PeekChunk reads is what
// LockChunk will.
func (s *Store) PeekChunk(ctx context.Context, runID string, seq int) (records []json.RawMessage, first int, ok bool, err error) {
	var payload, key []byte
	err = s.pool.QueryRow(ctx, `SELECT c.payload, c.first_index, k.wrapped FROM import_chunks c
		LEFT JOIN import_run_keys k ON k.run_id = c.run_id
		WHERE c.run_id = $1 AND c.seq = $2 AND c.processed_at IS NULL AND c.payload IS NOT NULL`, runID, seq).Scan(&payload, &first, &key)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, 0, false, nil
	}
	if err != nil {
		return nil, 0, false, fmt.Errorf("imports: peek chunk %d of run %s: %w", seq, runID, err)
	}
	if payload, err = s.openChunk(key, runID, seq, payload); err != nil {
		return nil, 0, false, err
	}
	return splitRecords(payload), first, true, nil
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
	return s.recordFailure(ctx, runID, seq, reason, nil)
}

// RecordIsolation is RecordFailure for an attempt that ran out of its
// budget while looking for the records that fail the chunk: it keeps, in
// the same short transaction, what the search found, for the next attempt
// to go on from (stagedChunk.Isolation).
func (s *Store) RecordIsolation(ctx context.Context, runID string, seq int, reason string, found Isolation) (int, error) {
	b, err := json.Marshal(found)
	if err != nil {
		return 0, fmt.Errorf("imports: record a failure of chunk %d of run %s: %w", seq, runID, err)
	}
	return s.recordFailure(ctx, runID, seq, reason, b)
}

// recordFailure counts a failure of the chunk and, unless isolation is
// nil, stores it as the chunk's Isolation.
func (s *Store) recordFailure(ctx context.Context, runID string, seq int, reason string, isolation []byte) (int, error) {
	var n int
	err := s.pool.QueryRow(ctx, `UPDATE import_chunks
		SET failures = failures + 1, last_failure = $3, failed_at = clock_timestamp(),
			isolation = COALESCE($4::jsonb, isolation)
		WHERE run_id = $1 AND seq = $2 AND processed_at IS NULL
		RETURNING failures`, runID, seq, reason, isolation).Scan(&n)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("imports: record a failure of chunk %d of run %s: %w", seq, runID, err)
	}
	return n, nil
}

// FinishChunk records in tx what the Importer made of the chunk: its
// rejections and warnings, the run's counts and state (running, or
// completed with its last chunk), and deletes the chunk's payload.
func (s *Store) FinishChunk(ctx context.Context, tx pgx.Tx, c stagedChunk, out importing.Outcome) error {
	accepted, rejections := out.Accepted, out.Rejections
	rejected := 0
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
		rejected = len(seen)
		b.Queue(`INSERT INTO import_rejections (run_id, record_index, ord, reason, field)
			SELECT $1, i, o, r, f FROM unnest($2::bigint[], $3::int[], $4::text[], $5::text[]) AS u(i, o, r, f)`,
			c.RunID, idx, ord, reasons, fields)
	}
	b.Queue(`UPDATE import_chunks SET payload = NULL, processed_at = clock_timestamp(), accepted = $3, rejected = $4, isolation = NULL
		WHERE run_id = $1 AND seq = $2`, c.RunID, c.Seq, accepted, rejected)
	// started_at is the start of the first chunk's transaction (now()),
	// finished_at the end of the last one's work (clock_timestamp()).
	b.Queue(`UPDATE import_runs SET accepted = accepted + $2, rejected = rejected + $3,
			chunks_done = chunks_done + 1, updated_at = clock_timestamp(),
			started_at = COALESCE(started_at, now()),
			state = CASE WHEN chunks_done + 1 >= chunks THEN 'completed' ELSE 'running' END,
			finished_at = CASE WHEN chunks_done + 1 >= chunks THEN clock_timestamp() END
		WHERE id = $1`, c.RunID, accepted, rejected)
	b.Queue(forgetRunKey, c.RunID)
	// After the run's update, which locks its row till the end of tx.
	queueWarnings(b, c.RunID, out.Warnings)
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return fmt.Errorf("imports: finish chunk %d of run %s: %w", c.Seq, c.RunID, err)
	}
	return nil
}
