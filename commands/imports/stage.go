package imports

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/jackc/pgx/v5"

	"github.com/clientele/clientele/domain"
	"github.com/clientele/clientele/domain/importing"
	"github.com/clientele/clientele/internal/bus"
	"github.com/clientele/clientele/internal/ingest"
)

// Run describes a run to stage: whose upload it is, and what its events
// will be attributed to.
type Run struct {
	ID, CompanyID string
	Entity        importing.Entity
	// Actor, Source and CorrelationID go into the metadata of every event
	// the run appends.
	Actor, Source, CorrelationID string
	// MayDestroy is whether the principal that sent the upload may delete
	// and forget: the records are applied later, by a worker that no
	// longer knows who sent them (Chunk.MayDestroy).
	MayDestroy bool
}

// Stage reads every record, stages them in chunks and schedules the run;
// it returns the number of records. When records fail (a malformed body,
// a body over its limit, a client gone) or staging does, it deletes what
// it staged and returns the error: nothing is scheduled.
func (s *Store) Stage(ctx context.Context, run Run, records ingest.Records, limits ingest.Limits) (received int, err error) {
	limits = limits.WithDefaults()
	if _, err := s.pool.Exec(ctx, `INSERT INTO import_runs (id, company_id, entity, state, actor, source, correlation_id, may_destroy)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
		run.ID, run.CompanyID, run.Entity, importing.Receiving, run.Actor, run.Source, run.CorrelationID, run.MayDestroy); err != nil {
		return 0, fmt.Errorf("imports: create run: %w", err)
	}
	defer func() {
		if err != nil {
			// Without the request's context: a client that went away
			// must not leave its chunks behind. If this fails too, the
			// worker's clean-up removes the run later.
			_ = s.discard(context.WithoutCancel(ctx), run.ID)
		}
	}()

	key, err := s.newRunKey(ctx, run.ID)
	if err != nil {
		return 0, err
	}
	w := s.newChunkWriter(ctx, run.ID, key)
	buf, seq, inChunk := w.buffer(), 0, 0
	group := groupKeys[run.Entity]
	var lastKey string
	cutPending := false
	for {
		start := buf.Len()
		err := records.Next(buf)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return 0, errors.Join(err, w.close())
		}
		var key string
		if group != nil {
			key = group(buf.Bytes()[start:])
			if cutPending && key != lastKey {
				// The chunk is full and a new group starts with this
				// record: it opens the next chunk.
				rec := append([]byte(nil), buf.Bytes()[start:]...)
				buf.Truncate(start)
				if !w.write(chunkJob{seq: seq, first: received - inChunk, n: inChunk, buf: buf}) {
					return 0, w.close()
				}
				buf, seq, inChunk, cutPending = w.buffer(), seq+1, 0, false
				buf.Write(rec)
			}
			lastKey = key
		}
		buf.WriteByte('\n')
		received++
		inChunk++
		full := inChunk >= limits.ChunkRecords || buf.Len() >= limits.ChunkBytes
		if full && group != nil && inChunk < groupMaxFactor*limits.ChunkRecords && buf.Len() < limits.ChunkBytes {
			cutPending = true
			continue
		}
		if full {
			if !w.write(chunkJob{seq: seq, first: received - inChunk, n: inChunk, buf: buf}) {
				return 0, w.close() // the database failed: stop reading
			}
			buf, seq, inChunk, cutPending = w.buffer(), seq+1, 0, false
		}
	}
	if inChunk > 0 {
		w.write(chunkJob{seq: seq, first: received - inChunk, n: inChunk, buf: buf})
		seq++
	}
	if err := w.close(); err != nil {
		return 0, err
	}
	if err := s.schedule(ctx, run, seq, received); err != nil {
		// The commit may have gone through with its answer lost (the
		// connection dropped as it committed): then the run is
		// scheduled, and the upload accepted, whatever the error said.
		// When even that cannot be asked, the error stands.
		if scheduled, serr := s.scheduled(ctx, run.ID); serr == nil && scheduled {
			return received, nil
		}
		return 0, err
	}
	return received, nil
}

// scheduledCheckTimeout bounds the question whether a run whose
// scheduling failed was scheduled after all; scheduledCheckRetry is how
// long it waits before it asks again while the database cannot answer.
const (
	scheduledCheckTimeout = 5 * time.Second
	scheduledCheckRetry   = 200 * time.Millisecond
)

// scheduled reports whether the run is past receiving: scheduled (or
// done) by a transaction that committed. While the database cannot
// answer, it asks again until scheduledCheckTimeout: the outage that
// lost the commit's answer may be short (a failover leaves no primary
// for a few seconds, and the commit is on the standby that takes over),
// and a connection refused fails at once.
func (s *Store) scheduled(ctx context.Context, runID string) (bool, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), scheduledCheckTimeout)
	defer cancel()
	retry := time.NewTicker(scheduledCheckRetry)
	defer retry.Stop()
	for {
		var past bool
		err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM import_runs WHERE id = $1 AND state <> 'receiving')`, runID).Scan(&past)
		if err == nil {
			return past, nil
		}
		select {
		case <-ctx.Done():
			return false, err
		case <-retry.C:
		}
	}
}

// groupKeys are, by entity, the key of the records that must share a
// chunk: the rows of one sale (sale_external_id), which the importer
// decides together (a flat sale's transaction fields may be on any of its
// rows). A full chunk is cut only where the key changes, up to
// groupMaxFactor times the chunk's records (never past its bytes, which
// bound the stager's memory): a sale of more rows than that still splits,
// and its parts are combined by upsert like uploads are.
var groupKeys = map[importing.Entity]func(record []byte) string{
	importing.Sales: saleKey,
}

const groupMaxFactor = 4

// saleKey returns a record's sale_external_id as its JSON text ("" when it
// has none or is not an object: the importer rejects it).
func saleKey(record []byte) string {
	var r struct {
		ID json.RawMessage `json:"sale_external_id"`
	}
	if json.Unmarshal(record, &r) != nil {
		return ""
	}
	return string(r.ID)
}

var errAbandoned = domain.Errorf(domain.Invalid, "the upload stalled for too long and was abandoned; send it again")

// addChunk writes one chunk in its own short transaction and marks the run
// as alive, so that the clean-up of abandoned uploads leaves it alone.
func (s *Store) addChunk(ctx context.Context, runID string, key []byte, seq, first, n int, payload []byte) error {
	payload, err := sealChunk(key, runID, seq, payload)
	if err != nil {
		return fmt.Errorf("imports: stage chunk %d of run %s: %w", seq, runID, err)
	}
	tag, err := s.pool.Exec(ctx, `WITH run AS (
			UPDATE import_runs SET received = received + $4, updated_at = now()
			WHERE id = $1 AND state = 'receiving' RETURNING id)
		INSERT INTO import_chunks (run_id, seq, first_index, records, payload)
		SELECT id, $2, $3, $4, $5 FROM run`, runID, seq, first, n, payload)
	if err != nil {
		return fmt.Errorf("imports: stage chunk %d of run %s: %w", seq, runID, err)
	}
	if tag.RowsAffected() == 0 {
		return errAbandoned
	}
	return nil
}

// publishBatch bounds the messages of one INSERT (three parameters each,
// at most 65535 per statement).
const publishBatch = 1000

// schedule makes the run scheduled and publishes its chunks, in one
// transaction: the messages exist exactly when the run is scheduled. A run
// without records is completed at once.
func (s *Store) schedule(ctx context.Context, run Run, chunks, received int) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE import_runs SET chunks = $2, received = $3, updated_at = now(), scheduled_tx = pg_current_xact_id(),
			state = CASE WHEN $2 = 0 THEN 'completed' ELSE 'scheduled' END,
			started_at = CASE WHEN $2 = 0 THEN now() END, finished_at = CASE WHEN $2 = 0 THEN now() END
			WHERE id = $1 AND state = 'receiving'`, run.ID, chunks, received)
		if err != nil {
			return fmt.Errorf("imports: schedule run %s: %w", run.ID, err)
		}
		if tag.RowsAffected() == 0 {
			return errAbandoned
		}
		if _, err := tx.Exec(ctx, forgetRunKey, run.ID); err != nil { // a run of no records is done
			return fmt.Errorf("imports: schedule run %s: %w", run.ID, err)
		}
		pub, err := bus.OutboxPublisher(tx, watermill.NopLogger{})
		if err != nil {
			return err
		}
		for first := 0; first < chunks; first += publishBatch {
			msgs := make([]*message.Message, 0, min(publishBatch, chunks-first))
			for seq := first; seq < first+cap(msgs); seq++ {
				payload, _ := json.Marshal(ChunkMessage{RunID: run.ID, Seq: seq, CompanyID: run.CompanyID})
				msg := message.NewMessage(watermill.NewUUID(), payload)
				msg.Metadata.Set("company_id", run.CompanyID)
				msg.Metadata.Set("run_id", run.ID)
				msg.Metadata.Set("seq", strconv.Itoa(seq))
				msg.SetContext(ctx)
				msgs = append(msgs, msg)
			}
			if err := pub.Publish(ChunksTopic, msgs...); err != nil {
				return fmt.Errorf("imports: publish chunks of run %s: %w", run.ID, err)
			}
		}
		return nil
	})
}

// discard deletes a run that was never scheduled, and its chunks; a run
// that did get scheduled (a commit reported as failed that went through)
// is left alone.
func (s *Store) discard(ctx context.Context, runID string) error {
	_, err := s.pool.Exec(ctx, `WITH run AS (
			DELETE FROM import_runs WHERE id = $1 AND state = 'receiving' RETURNING id)
		DELETE FROM import_chunks WHERE run_id IN (SELECT id FROM run)`, runID)
	return err
}
