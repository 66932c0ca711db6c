package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/clientele/clientele/eventstore"
)

// ErrTxHasCommit reports a second AppendTx in one transaction: a commit is
// identified by its transaction id, so a transaction holds at most one.
var ErrTxHasCommit = errors.New("eventstore: the transaction already holds a commit")

// reserveSQL locks the commit's streams and advances their versions,
// creating missing ones, and reserves the events' positions, in one round
// trip. The upsert locks existing rows in input order (sorted ids, so that
// commits cannot deadlock) and waits for a concurrent creation of the same
// stream to end, then sees its result: the version it returns is always
// current, and the expected-version check made from it is exact.
const reserveSQL = `
WITH up AS (
	INSERT INTO streams AS s (stream_id, company_id, version)
	SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[])
	ON CONFLICT (stream_id) DO UPDATE SET version = s.version + EXCLUDED.version
	RETURNING s.stream_id, s.version
)
SELECT pg_current_xact_id(),
	EXISTS (SELECT FROM events WHERE transaction_id = pg_current_xact_id()),
	(SELECT array_agg(nextval('events_global_position_seq')) FROM generate_series(1, $4)),
	array_agg(up.stream_id), array_agg(up.version)
FROM up`

// AppendTx writes the commit in the caller's transaction, so that write-side
// state can change atomically with it. A transaction holds at most one
// commit (ErrTxHasCommit). After any error, including a *ConflictError, the
// transaction must be rolled back: stream versions may already have moved.
// The transaction must run at READ COMMITTED, PostgreSQL's default.
func (s *Store) AppendTx(ctx context.Context, tx pgx.Tx, c eventstore.Commit) (eventstore.Committed, error) {
	if err := c.Validate(); err != nil {
		return eventstore.Committed{}, err
	}
	streams := slices.Clone(c.Streams)
	slices.SortFunc(streams, func(a, b eventstore.StreamAppend) int { return strings.Compare(a.StreamID, b.StreamID) })
	ids := make([]string, len(streams))
	companies := make([]string, len(streams))
	counts := make([]int64, len(streams))
	for i, st := range streams {
		ids[i], companies[i], counts[i] = st.StreamID, c.Metadata.CompanyID, int64(len(st.Events))
	}

	n := c.Count()
	var (
		txID        uint64
		taken       bool
		positions   []int64
		gotIDs      []string
		gotVersions []int64
	)
	t0 := time.Now()
	defer func() { StepTimes[2] += time.Since(t0) }()
	q := reserveSQL
	switch os.Getenv("EXP") {
	case "noseq":
		q = strings.Replace(q, "nextval('events_global_position_seq')", "g+(SELECT coalesce(max(global_position),0) FROM events)", 1)
		q = strings.Replace(q, "generate_series(1, $4)", "generate_series(1, $4) g", 1)
	case "nostreams":
		q = `SELECT pg_current_xact_id(), false, (SELECT array_agg(nextval('events_global_position_seq')) FROM generate_series(1, $4)), $1::text[], $3::bigint[] WHERE $2::text[] IS NOT NULL`
	}
	if err := tx.QueryRow(ctx, q, ids, companies, counts, n).Scan(&txID, &taken, &positions, &gotIDs, &gotVersions); err != nil {
		return eventstore.Committed{}, fmt.Errorf("eventstore: lock streams: %w", err)
	}
	StepTimes[0] += time.Since(t0)
	t1 := time.Now()
	if taken {
		return eventstore.Committed{}, ErrTxHasCommit
	}
	slices.Sort(positions)
	newVersion := make(map[string]int64, len(gotIDs))
	for i, id := range gotIDs {
		newVersion[id] = gotVersions[i]
	}

	meta, err := json.Marshal(c.Metadata)
	if err != nil {
		return eventstore.Committed{}, err
	}
	now := s.Now().UTC().Truncate(time.Microsecond)
	recorded := make([]eventstore.RecordedEvent, 0, n)
	rows := make([][]any, 0, n)
	for _, st := range c.Streams {
		v := newVersion[st.StreamID] - int64(len(st.Events))
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
			rows = append(rows, []any{pos, st.StreamID, v, c.Metadata.CompanyID, e.Type, []byte(e.Data), meta, now})
		}
	}
	if _, err := tx.CopyFrom(ctx, pgx.Identifier{"events"},
		[]string{"global_position", "stream_id", "stream_version", "company_id", "event_type", "data", "metadata", "recorded_at"},
		pgx.CopyFromRows(rows)); err != nil {
		return eventstore.Committed{}, mapError(fmt.Errorf("eventstore: write events: %w", err))
	}
	StepTimes[1] += time.Since(t1)
	committed := eventstore.Committed{TxID: txID, Events: recorded, First: recorded[0].Position, Last: recorded[n-1].Position}
	for _, h := range s.hooks {
		if err := h.AfterAppend(ctx, tx, committed); err != nil {
			return eventstore.Committed{}, err
		}
	}
	return committed, nil
}

// StepTimes is temporary instrumentation.
var StepTimes [3]time.Duration
