package postgres

import (
	"context"
	"errors"
	"strconv"

	"github.com/jackc/pgx/v5"

	"github.com/clientele/clientele/eventstore"
)

// Log is the event log's tables (events, streams) read through a pool, a
// connection or a transaction: the reads of the log that Store's methods
// do not cover, for the projection runtime and its projectors. They live
// here, beside the writes and the reading order they depend on, so that
// no other package holds SQL against the log's tables. Give a transaction
// when the read must run inside it (see, or lock, what it sees).
//
// Unlike Store's, its methods return the driver's errors as they are: the
// caller says what it was doing.
type Log struct {
	q eventstore.Querier
}

// NewLog returns the log read through q.
func NewLog(q eventstore.Querier) Log { return Log{q: q} }

// events runs a query of the columns of ScanEvents and reads its rows.
func (l Log) events(ctx context.Context, sql string, args ...any) ([]eventstore.RecordedEvent, error) {
	rows, err := l.q.Query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	return ScanEvents(rows)
}

// NextCommit returns the transaction id of the first commit after pos in
// the log, if it is not after the commit of transaction upTo, and false
// when there is none.
//
// The bound is what keeps it cheap. When a reader is caught up, the index
// entries right after its position, past the commit just announced, are
// those of the transactions still running (an import's next chunk, a
// thousand rows): unbounded, the scan would visit each of them, invisible,
// before it found none (measured: 3.7 ms a call, six projectors a commit).
// A commit is announced once every transaction before it has ended (the
// outbox is read, as the log, below pg_snapshot_xmin), so up to upTo every
// entry is of an ended transaction, and the scan stops at its first
// visible one.
func (l Log) NextCommit(ctx context.Context, pos eventstore.Position, upTo uint64) (uint64, bool, error) {
	var xid string
	// ORDER BY names the table's columns: a bare transaction_id would be
	// the output column, its text, whose order is not the log's ("1000"
	// sorts before "999") and which no index gives, so every row after
	// pos would be read and sorted.
	err := l.q.QueryRow(ctx, `SELECT transaction_id::text FROM events
		WHERE (transaction_id, global_position) > ($1::text::xid8, $2) AND transaction_id <= $3::text::xid8
		ORDER BY events.transaction_id, events.global_position LIMIT 1`,
		strconv.FormatUint(pos.TxID, 10), pos.Global, strconv.FormatUint(upTo, 10)).Scan(&xid)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	tx, err := strconv.ParseUint(xid, 10, 64)
	return tx, true, err
}

// CountEvents counts the events after `after` up to and including upTo,
// of every transaction, visible or not yet, but no more than atMost when
// it is above zero. The range is a scan of the events primary key, so it
// costs what it counts: cheap for a small lag, a full scan from the start
// of the log; atMost bounds it (a gauge of a projector a million events
// behind read them all every time: 823 ms a call at 300,000).
func (l Log) CountEvents(ctx context.Context, after, upTo eventstore.Position, atMost int64) (int64, error) {
	if !after.Less(upTo) {
		return 0, nil
	}
	var limit *int64 // NULL: no LIMIT
	if atMost > 0 {
		limit = &atMost
	}
	var n int64
	err := l.q.QueryRow(ctx, `SELECT count(*) FROM (SELECT FROM events
		WHERE (transaction_id, global_position) > ($1::text::xid8, $2)
		  AND (transaction_id, global_position) <= ($3::text::xid8, $4) LIMIT $5) counted`,
		strconv.FormatUint(after.TxID, 10), after.Global, strconv.FormatUint(upTo.TxID, 10), upTo.Global, limit).Scan(&n)
	if err != nil {
		return 0, err
	}
	return n, nil
}

// CommitHasType reports whether the commit of transaction txID holds an
// event of type eventType: for a reader given a commit header that does
// not list its types (one written before headers did).
func (l Log) CommitHasType(ctx context.Context, txID uint64, eventType string) (bool, error) {
	var has bool
	err := l.q.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM events WHERE transaction_id = $1::text::xid8 AND event_type = $2)`,
		strconv.FormatUint(txID, 10), eventType).Scan(&has)
	return has, err
}

// ReadCompanyTypes returns, in log order, at most limit events of one
// company whose type is one of types, strictly between the positions
// after and before: a page of events, which may end inside a commit.
//
// It has no pg_snapshot_xmin bound: the caller must know that no event
// before `before` can still appear (a projector applying the commit at
// before gets it only once every earlier transaction has ended).
func (l Log) ReadCompanyTypes(ctx context.Context, companyID string, types []string, after, before eventstore.Position, limit int) ([]eventstore.RecordedEvent, error) {
	// events.transaction_id: see selectEvents.
	return l.events(ctx, selectEvents+`WHERE company_id = $1 AND event_type = ANY($2)
			AND (transaction_id, global_position) > ($3::text::xid8, $4)
			AND (transaction_id, global_position) < ($5::text::xid8, $6)
		ORDER BY events.transaction_id, events.global_position LIMIT $7`,
		companyID, types, strconv.FormatUint(after.TxID, 10), after.Global,
		strconv.FormatUint(before.TxID, 10), before.Global, limit)
}

// ReadStreamsUpTo reads, in one query, the events of each of streams from
// its start up to and including its version in upto (upto[i] for
// streams[i]), stream by stream in version order. A stream that does not
// exist has no events.
func (l Log) ReadStreamsUpTo(ctx context.Context, streams []string, upto []int64) ([]eventstore.RecordedEvent, error) {
	return l.events(ctx, `SELECT e.stream_id, e.stream_version, e.event_type, e.data, e.metadata, e.recorded_at,
			e.transaction_id::text, e.global_position
		FROM unnest($1::text[], $2::bigint[]) AS w(stream_id, upto)
		JOIN streams s ON s.stream_id = w.stream_id
		JOIN events e ON e.stream_key = s.stream_key AND e.stream_version <= w.upto
		ORDER BY e.stream_key, e.stream_version`, streams, upto)
}

// EachEventRecorded calls fn with the company and the data of the
// EventRecorded event of each pair (companies[i], ids[i]) whose data has
// that "id", in one query: two index lookups a pair.
//
// It is the one read of the log by a field of an event's data, and it is
// specific to one event type because the index it needs is:
// events_activity_id (migration 00012) is on (company_id, data->'id')
// WHERE event_type = 'EventRecorded'. The type is a literal of the query,
// not a parameter, so that every plan of the statement, a generic one
// too, can use that partial index. fn must not keep data.
func (l Log) EachEventRecorded(ctx context.Context, companies []string, ids []int64, fn func(companyID string, data []byte) error) error {
	rows, err := l.q.Query(ctx, `SELECT e.company_id, e.data FROM unnest($1::text[], $2::bigint[]) AS w(company_id, id)
		JOIN events e ON e.company_id = w.company_id AND e.event_type = 'EventRecorded' AND e.data->'id' = to_jsonb(w.id)`,
		companies, ids)
	if err != nil {
		return err
	}
	var company string
	var data []byte
	_, err = pgx.ForEachRow(rows, []any{&company, &data}, func() error { return fn(company, data) })
	return err
}

// LockAppends stops appends until the transaction q ends (q must be one):
// an append's COPY into events waits for the lock, readers of the log do
// not. With it held, no transaction has uncommitted events, so the whole
// log is visible without the pg_snapshot_xmin bound (ReadAfter).
func (l Log) LockAppends(ctx context.Context) error {
	_, err := l.q.Exec(ctx, `LOCK TABLE events IN EXCLUSIVE MODE`)
	return err
}

// ReadAfter returns every event after the position, in log order, with no
// limit and no pg_snapshot_xmin bound: what is visible to q, including
// commits an earlier transaction may still precede. Call it under
// LockAppends, where nothing can precede them any more.
func (l Log) ReadAfter(ctx context.Context, after eventstore.Position) ([]eventstore.RecordedEvent, error) {
	// events.transaction_id: see selectEvents.
	return l.events(ctx, selectEvents+`WHERE (transaction_id, global_position) > ($1::text::xid8, $2)
		ORDER BY events.transaction_id, events.global_position`, strconv.FormatUint(after.TxID, 10), after.Global)
}
