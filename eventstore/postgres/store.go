// Package postgres is the default event store adapter: the log lives in one
// PostgreSQL table, written with COPY, one transaction per commit.
//
// Ordering. A global position is taken from a sequence when a row is
// inserted, but the row becomes visible only when its transaction commits,
// so positions alone do not give a safe reading order: a reader could pass
// position 11 (committed) while 10 (still open) later appears behind it.
// Every row therefore carries the id of its transaction (xid8). Readers
// order by (transaction_id, global_position) and only read transactions
// older than the oldest one still running (pg_snapshot_xmin), so anything
// they have not read yet can only appear after what they have read.
package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/clientele/clientele/eventstore"
)

// TxHook runs inside the append transaction, after the events are written
// and before the transaction commits: inline projections and the outbox
// publication of the commit. A hook's error aborts the whole commit.
type TxHook interface {
	AfterAppend(ctx context.Context, tx pgx.Tx, c eventstore.Committed) error
}

// TxHookFunc adapts a function to TxHook.
type TxHookFunc func(ctx context.Context, tx pgx.Tx, c eventstore.Committed) error

// AfterAppend calls f.
func (f TxHookFunc) AfterAppend(ctx context.Context, tx pgx.Tx, c eventstore.Committed) error {
	return f(ctx, tx, c)
}

// Store is the PostgreSQL event store.
type Store struct {
	pool  *pgxpool.Pool
	hooks []TxHook
	// Now is the clock stamped on recorded events.
	Now func() time.Time
}

var _ eventstore.Store = (*Store)(nil)

// New returns a store on pool. Hooks run in every append transaction, in
// order.
func New(pool *pgxpool.Pool, hooks ...TxHook) *Store {
	return &Store{pool: pool, hooks: hooks, Now: time.Now}
}

// AddHook adds a hook; call it before the store is used.
func (s *Store) AddHook(h TxHook) { s.hooks = append(s.hooks, h) }

// Pool returns the store's connection pool.
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

// Append writes the commit in its own transaction.
func (s *Store) Append(ctx context.Context, c eventstore.Commit) (eventstore.Committed, error) {
	var out eventstore.Committed
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var err error
		out, err = s.AppendTx(ctx, tx, c)
		return err
	})
	if err != nil {
		return eventstore.Committed{}, mapError(err)
	}
	return out, nil
}

// AppendTx writes the commit in the caller's transaction, so that write-side
// state can change atomically with it. A transaction holds at most one
// commit: the commit is identified by its transaction id.
func (s *Store) AppendTx(ctx context.Context, tx pgx.Tx, c eventstore.Commit) (eventstore.Committed, error) {
	if err := c.Validate(); err != nil {
		return eventstore.Committed{}, err
	}
	// Lock and create streams in one order everywhere, so that concurrent
	// commits cannot deadlock.
	ids := make([]string, len(c.Streams))
	for i, st := range c.Streams {
		ids[i] = st.StreamID
	}
	sort.Strings(ids)

	actual := make(map[string]int64, len(ids))
	rows, err := tx.Query(ctx, `SELECT stream_id, version FROM streams WHERE stream_id = ANY($1) ORDER BY stream_id FOR UPDATE`, ids)
	if err != nil {
		return eventstore.Committed{}, fmt.Errorf("eventstore: lock streams: %w", err)
	}
	for rows.Next() {
		var id string
		var v int64
		if err := rows.Scan(&id, &v); err != nil {
			rows.Close()
			return eventstore.Committed{}, err
		}
		actual[id] = v
	}
	if err := rows.Err(); err != nil {
		return eventstore.Committed{}, fmt.Errorf("eventstore: lock streams: %w", err)
	}

	n := c.Count()
	var xid string
	var positions []int64
	if err := tx.QueryRow(ctx, `SELECT pg_current_xact_id()::text, array_agg(nextval('events_global_position_seq')) FROM generate_series(1, $1)`, n).Scan(&xid, &positions); err != nil {
		return eventstore.Committed{}, fmt.Errorf("eventstore: reserve positions: %w", err)
	}
	txID, err := strconv.ParseUint(xid, 10, 64)
	if err != nil {
		return eventstore.Committed{}, fmt.Errorf("eventstore: transaction id %q: %w", xid, err)
	}
	sort.Slice(positions, func(i, j int) bool { return positions[i] < positions[j] })

	meta, err := json.Marshal(c.Metadata)
	if err != nil {
		return eventstore.Committed{}, err
	}
	now := s.Now().UTC().Truncate(time.Microsecond)
	newVersion := make(map[string]int64, len(ids))
	recorded := make([]eventstore.RecordedEvent, 0, n)
	copyRows := make([][]any, 0, n)
	for _, st := range c.Streams {
		v := actual[st.StreamID]
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
			copyRows = append(copyRows, []any{pos, st.StreamID, v, c.Metadata.CompanyID, e.Type, []byte(e.Data), meta, now})
		}
		newVersion[st.StreamID] = v
	}
	newVersions := make([]int64, len(ids))
	companies := make([]string, len(ids))
	for i, id := range ids {
		newVersions[i] = newVersion[id]
		companies[i] = c.Metadata.CompanyID
	}
	if _, err := tx.Exec(ctx, `
		INSERT INTO streams (stream_id, company_id, version)
		SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[])
		ON CONFLICT (stream_id) DO UPDATE SET version = EXCLUDED.version`,
		ids, companies, newVersions); err != nil {
		return eventstore.Committed{}, mapError(err)
	}
	if _, err := tx.CopyFrom(ctx, pgx.Identifier{"events"},
		[]string{"global_position", "stream_id", "stream_version", "company_id", "event_type", "data", "metadata", "recorded_at"},
		pgx.CopyFromRows(copyRows)); err != nil {
		return eventstore.Committed{}, mapError(fmt.Errorf("eventstore: write events: %w", err))
	}
	committed := eventstore.Committed{TxID: txID, Events: recorded}
	committed.First = recorded[0].Position
	committed.Last = recorded[len(recorded)-1].Position
	for _, h := range s.hooks {
		if err := h.AfterAppend(ctx, tx, committed); err != nil {
			return eventstore.Committed{}, err
		}
	}
	return committed, nil
}

const selectEvents = `SELECT stream_id, stream_version, event_type, data, metadata, recorded_at, transaction_id::text, global_position FROM events `

// ReadStream returns the events of one stream above afterVersion.
func (s *Store) ReadStream(ctx context.Context, streamID string, afterVersion int64) ([]eventstore.RecordedEvent, error) {
	return s.query(ctx, selectEvents+`WHERE stream_id = $1 AND stream_version > $2 ORDER BY stream_version`, streamID, afterVersion)
}

// ReadLog returns whole commits after the position, at least limit events
// unless the visible log ends first.
func (s *Store) ReadLog(ctx context.Context, after eventstore.Position, limit int) ([]eventstore.RecordedEvent, error) {
	if limit <= 0 {
		limit = 1000
	}
	evs, err := s.query(ctx, selectEvents+`
		WHERE (transaction_id, global_position) > ($1::text::xid8, $2)
		  AND transaction_id < pg_snapshot_xmin(pg_current_snapshot())
		ORDER BY transaction_id, global_position
		LIMIT $3`, strconv.FormatUint(after.TxID, 10), after.Global, limit)
	if err != nil || len(evs) < limit {
		return evs, err
	}
	// Finish the last commit: it is committed, so all of it is visible.
	last := evs[len(evs)-1].Position
	rest, err := s.query(ctx, selectEvents+`WHERE transaction_id = $1::text::xid8 AND global_position > $2 ORDER BY global_position`,
		strconv.FormatUint(last.TxID, 10), last.Global)
	return append(evs, rest...), err
}

// ReadCommit returns the events of the commit written by transaction txID.
func (s *Store) ReadCommit(ctx context.Context, txID uint64) ([]eventstore.RecordedEvent, error) {
	return s.query(ctx, selectEvents+`WHERE transaction_id = $1::text::xid8 ORDER BY global_position`, strconv.FormatUint(txID, 10))
}

// Head returns the position of the last event visible to ReadLog.
func (s *Store) Head(ctx context.Context) (eventstore.Position, error) {
	var xid string
	var p eventstore.Position
	err := s.pool.QueryRow(ctx, `SELECT transaction_id::text, global_position FROM events
		WHERE transaction_id < pg_snapshot_xmin(pg_current_snapshot())
		ORDER BY transaction_id DESC, global_position DESC LIMIT 1`).Scan(&xid, &p.Global)
	if errors.Is(err, pgx.ErrNoRows) {
		return eventstore.Position{}, nil
	}
	if err != nil {
		return eventstore.Position{}, err
	}
	p.TxID, err = strconv.ParseUint(xid, 10, 64)
	return p, err
}

func (s *Store) query(ctx context.Context, sql string, args ...any) ([]eventstore.RecordedEvent, error) {
	rows, err := s.pool.Query(ctx, sql, args...)
	if err != nil {
		return nil, fmt.Errorf("eventstore: read: %w", err)
	}
	return ScanEvents(rows)
}

// ScanEvents reads rows of the columns of selectEvents.
func ScanEvents(rows pgx.Rows) ([]eventstore.RecordedEvent, error) {
	defer rows.Close()
	var out []eventstore.RecordedEvent
	for rows.Next() {
		var e eventstore.RecordedEvent
		var data, meta []byte
		var xid string
		if err := rows.Scan(&e.StreamID, &e.StreamVersion, &e.Type, &data, &meta, &e.RecordedAt, &xid, &e.Position.Global); err != nil {
			return nil, fmt.Errorf("eventstore: read: %w", err)
		}
		e.Data = data
		if err := json.Unmarshal(meta, &e.Metadata); err != nil {
			return nil, fmt.Errorf("eventstore: metadata of %s/%d: %w", e.StreamID, e.StreamVersion, err)
		}
		var err error
		if e.Position.TxID, err = strconv.ParseUint(xid, 10, 64); err != nil {
			return nil, err
		}
		e.RecordedAt = e.RecordedAt.UTC()
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("eventstore: read: %w", err)
	}
	return out, nil
}

var duplicateStream = regexp.MustCompile(`\(stream_id\)=\((.*)\)`)

// mapError turns a concurrent creation of the same stream (a unique
// violation on streams or events) into a *ConflictError.
func mapError(err error) error {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "23505" {
		id := ""
		if m := duplicateStream.FindStringSubmatch(pgErr.Detail); m != nil {
			id = m[1]
		}
		return &eventstore.ConflictError{StreamID: id, Expected: eventstore.NoStream, Actual: 1}
	}
	return err
}
