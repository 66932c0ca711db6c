package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/clientele/clientele/eventstore"
)

// reserveSQL reserves the commit's positions, then locks its streams and
// advances their versions, creating missing ones, in one round trip.
//
// The upsert locks existing rows in id order (so that commits cannot
// deadlock) and waits for a concurrent creation of the same stream to end,
// then sees its result: the version it returns is always current, and the
// expected-version check made from it is exact, with no retry.
//
// A new stream's key is the position of its first event: unique, and
// growing, so that the events_stream index is appended to at its end.
const reserveSQL = `
WITH pos AS MATERIALIZED (
	SELECT array_agg(nextval('events_global_position_seq') ORDER BY g) AS a FROM generate_series(1, $5) g
), up AS (
	INSERT INTO streams AS s (stream_id, stream_key, company_id, version)
	SELECT u.id, pos.a[u.first], $2, u.n
	FROM unnest($1::text[], $3::bigint[], $4::int[]) AS u(id, n, first), pos
	ORDER BY u.id
	ON CONFLICT (stream_id) DO UPDATE SET version = s.version + EXCLUDED.version
	RETURNING s.stream_id, s.stream_key, s.version
)
SELECT pg_current_xact_id(),
	EXISTS (SELECT FROM events WHERE transaction_id = pg_current_xact_id()),
	(SELECT a FROM pos), array_agg(up.stream_id), array_agg(up.stream_key), array_agg(up.version)
FROM up`

// streamState is a stream as the reservation left it.
type streamState struct {
	key, version int64
}

// AppendTx writes the commit in the caller's transaction, so that write-side
// state can change atomically with it. A transaction holds at most one
// commit (eventstore.ErrTxHasCommit). After any error, including a *ConflictError, the
// transaction must be rolled back: stream versions may already have moved.
// The transaction must run at READ COMMITTED, PostgreSQL's default.
func (s *Store) AppendTx(ctx context.Context, tx pgx.Tx, c eventstore.Commit) (eventstore.Committed, error) {
	if err := c.Validate(); err != nil {
		return eventstore.Committed{}, err
	}
	ids := make([]string, len(c.Streams))
	counts := make([]int64, len(c.Streams))
	firsts := make([]int32, len(c.Streams)) // 1-based index of the stream's first event
	n := 0
	for i, st := range c.Streams {
		ids[i], counts[i], firsts[i] = st.StreamID, int64(len(st.Events)), int32(n+1)
		n += len(st.Events)
	}

	var (
		txID      uint64
		taken     bool
		positions []int64
		gotIDs    []string
		gotKeys   []int64
		gotVers   []int64
	)
	if err := tx.QueryRow(ctx, reserveSQL, ids, c.Metadata.CompanyID, counts, firsts, n).Scan(&txID, &taken, &positions, &gotIDs, &gotKeys, &gotVers); err != nil {
		return eventstore.Committed{}, storeError(fmt.Errorf("eventstore: lock streams: %w", err))
	}
	if taken {
		return eventstore.Committed{}, eventstore.ErrTxHasCommit
	}
	streams := make(map[string]streamState, len(gotIDs))
	for i, id := range gotIDs {
		streams[id] = streamState{key: gotKeys[i], version: gotVers[i]}
	}

	meta, err := json.Marshal(c.Metadata)
	if err != nil {
		return eventstore.Committed{}, err
	}
	now := s.Now().UTC().Truncate(time.Microsecond)
	recorded := make([]eventstore.RecordedEvent, 0, n)
	rows := make([][]any, 0, n)
	for _, st := range c.Streams {
		state := streams[st.StreamID]
		v := state.version - int64(len(st.Events))
		if err := eventstore.CheckVersion(st.StreamID, st.ExpectedVersion, v); err != nil {
			return eventstore.Committed{}, err
		}
		for _, e := range st.Events {
			v++
			pos := positions[len(recorded)]
			recorded = append(recorded, eventstore.RecordedEvent{
				StreamID: st.StreamID, StreamVersion: v, Type: e.Type, Data: e.Data,
				Metadata: c.Metadata, RecordedAt: now,
				Position: eventstore.Position{TxID: txID, Global: pos},
			})
			rows = append(rows, []any{pos, st.StreamID, state.key, v, c.Metadata.CompanyID, e.Type, []byte(e.Data), meta, now})
		}
	}
	if _, err := tx.CopyFrom(ctx, pgx.Identifier{"events"},
		[]string{"global_position", "stream_id", "stream_key", "stream_version", "company_id", "event_type", "data", "metadata", "recorded_at"},
		pgx.CopyFromRows(rows)); err != nil {
		return eventstore.Committed{}, storeError(fmt.Errorf("eventstore: write events: %w", err))
	}
	committed := eventstore.Committed{TxID: txID, Events: recorded, First: recorded[0].Position, Last: recorded[n-1].Position}
	for _, h := range s.hooks {
		if err := h.AfterAppend(ctx, tx, committed); err != nil {
			return eventstore.Committed{}, err
		}
	}
	return committed, nil
}
