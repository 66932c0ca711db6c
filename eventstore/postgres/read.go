package postgres

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/jackc/pgx/v5"

	"github.com/clientele/clientele/eventstore"
)

// selectEvents reads events. Its output column transaction_id is text (pgx
// has no xid8 type), so an ORDER BY must name the table's column
// (events.transaction_id): a bare "transaction_id" sorts by the output
// column, as text, which puts commit 1000 before commit 999.
const selectEvents = `SELECT stream_id, stream_version, event_type, data, metadata, recorded_at, transaction_id::text, global_position FROM events `

// ReadStream returns the events of one stream above afterVersion.
func (s *Store) ReadStream(ctx context.Context, streamID string, afterVersion int64) ([]eventstore.RecordedEvent, error) {
	return s.query(ctx, selectEvents+`
		WHERE stream_key = (SELECT stream_key FROM streams WHERE stream_id = $1) AND stream_version > $2
		ORDER BY stream_version`, streamID, afterVersion)
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
		ORDER BY events.transaction_id, events.global_position
		LIMIT $3`, strconv.FormatUint(after.TxID, 10), after.Global, limit)
	if err != nil || len(evs) < limit {
		return evs, err
	}
	return s.finishCommit(ctx, evs)
}

// finishCommit appends to a full page of the log the rest of its last
// commit, which LIMIT may have cut: it is committed, so all of it is
// visible.
func (s *Store) finishCommit(ctx context.Context, evs []eventstore.RecordedEvent) ([]eventstore.RecordedEvent, error) {
	last := evs[len(evs)-1].Position
	rest, err := s.query(ctx, selectEvents+`WHERE transaction_id = $1::text::xid8 AND global_position > $2 ORDER BY global_position`,
		strconv.FormatUint(last.TxID, 10), last.Global)
	return append(evs, rest...), err
}

// ReadCompanyLog returns the commits of one company after the position
// after up to and including upTo, in log order: whole commits, at least
// limit events unless the range ends first, like ReadLog. upTo should end
// a commit (a checkpoint does), or the commit it falls in is cut.
//
// It walks the log's primary key from after and reads each event's
// company: the log has no index by company, which every append would pay
// for. So it costs the events of every company in the range, up to the
// page's last one: cheap when the company has commits all along it. It is
// for the rare reader that follows one company behind the others (a
// projector retrying a company it parked, projections/stall.go).
func (s *Store) ReadCompanyLog(ctx context.Context, companyID string, after, upTo eventstore.Position, limit int) ([]eventstore.RecordedEvent, error) {
	if limit <= 0 {
		limit = 1000
	}
	if !after.Less(upTo) {
		return nil, nil
	}
	evs, err := s.query(ctx, selectEvents+`
		WHERE (transaction_id, global_position) > ($2::text::xid8, $3)
		  AND (transaction_id, global_position) <= ($4::text::xid8, $5)
		  AND transaction_id < pg_snapshot_xmin(pg_current_snapshot())
		  AND company_id = $1
		ORDER BY events.transaction_id, events.global_position
		LIMIT $6`, companyID, strconv.FormatUint(after.TxID, 10), after.Global,
		strconv.FormatUint(upTo.TxID, 10), upTo.Global, limit)
	if err != nil || len(evs) < limit {
		return evs, err
	}
	if evs, err = s.finishCommit(ctx, evs); err != nil {
		return nil, err
	}
	// Finishing a commit that upTo falls in would pass upTo.
	for len(evs) > 0 && upTo.Less(evs[len(evs)-1].Position) {
		evs = evs[:len(evs)-1]
	}
	return evs, nil
}

// How many rows each FETCH of EachCompanyEvent's cursor asks for: a
// round trip each, the rows read one at a time as they arrive (so it
// bounds no memory but the server's), and those of a FETCH are all read
// even when fn stops early. The first asks few, for a reader that stops
// soon (a page of the feed); each next asks twice as many, up to the
// most.
const (
	companyLogFirstFetch = 500
	companyLogMostFetch  = 8000
)

// EachCompanyEvent hands fn each event of ReadCompanyLog's range, read
// through a cursor (a read-only transaction that DECLAREs the query once
// and FETCHes its rows in batches): one plan and one walk of the log's
// primary key for the whole range, not a query per page, and a stop at
// any point ends the transaction without reading the rest. The
// transaction takes no transaction id, so it holds back no reader of
// the log (pg_snapshot_xmin); it holds a connection and its snapshot
// (VACUUM's horizon) while fn runs.
func (s *Store) EachCompanyEvent(ctx context.Context, companyID string, after, upTo eventstore.Position, fn func(eventstore.RecordedEvent) error) error {
	if !after.Less(upTo) {
		return nil
	}
	var fnErr error
	err := pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `DECLARE company_log NO SCROLL CURSOR FOR `+selectEvents+`
			WHERE (transaction_id, global_position) > ($2::text::xid8, $3)
			  AND (transaction_id, global_position) <= ($4::text::xid8, $5)
			  AND transaction_id < pg_snapshot_xmin(pg_current_snapshot())
			  AND company_id = $1
			ORDER BY events.transaction_id, events.global_position`, companyID, strconv.FormatUint(after.TxID, 10), after.Global,
			strconv.FormatUint(upTo.TxID, 10), upTo.Global); err != nil {
			return fmt.Errorf("eventstore: read: %w", err)
		}
		var meta metadataCache
		for fetch := companyLogFirstFetch; ; fetch = min(2*fetch, companyLogMostFetch) {
			rows, err := tx.Query(ctx, `FETCH `+strconv.Itoa(fetch)+` FROM company_log`)
			if err != nil {
				return fmt.Errorf("eventstore: read: %w", err)
			}
			n := 0
			for rows.Next() {
				n++
				e, err := scanEvent(rows, &meta)
				if err != nil {
					rows.Close()
					return err
				}
				if fnErr = fn(e); fnErr != nil {
					rows.Close()
					return fnErr
				}
			}
			if err := rows.Err(); err != nil {
				return fmt.Errorf("eventstore: read: %w", err)
			}
			if n < fetch {
				return nil
			}
		}
	})
	if fnErr != nil {
		return fnErr // fn's, as it is
	}
	return storeError(err)
}

// ReadCommit returns the events of the commit written by transaction txID.
func (s *Store) ReadCommit(ctx context.Context, txID uint64) ([]eventstore.RecordedEvent, error) {
	return s.query(ctx, selectEvents+`WHERE transaction_id = $1::text::xid8 ORDER BY global_position`, strconv.FormatUint(txID, 10))
}

// ReadCommitTypes returns the events of the commit written by transaction
// txID whose type is one of types, and the span of the whole commit (all
// its events, of any type), so that a reader that skips types can still
// check the commit against what was announced. A reader that needs a few
// types of a large commit (a projector of products, given a commit of
// 1,000 customers) fetches, decodes and transfers none of the rest.
func (s *Store) ReadCommitTypes(ctx context.Context, txID uint64, types []string) ([]eventstore.RecordedEvent, eventstore.CommitSpan, error) {
	var span eventstore.CommitSpan
	tx := strconv.FormatUint(txID, 10)
	var first, last *int64
	if err := s.pool.QueryRow(ctx, `SELECT count(*), min(global_position), max(global_position) FROM events
		WHERE transaction_id = $1::text::xid8`, tx).Scan(&span.Count, &first, &last); err != nil {
		return nil, span, storeError(fmt.Errorf("eventstore: read: %w", err))
	}
	if span.Count == 0 {
		return nil, span, nil
	}
	span.First, span.Last = *first, *last
	evs, err := s.query(ctx, selectEvents+`WHERE transaction_id = $1::text::xid8 AND event_type = ANY($2) ORDER BY global_position`, tx, types)
	return evs, span, err
}

// Head returns the position of the last event visible to ReadLog.
func (s *Store) Head(ctx context.Context) (eventstore.Position, error) {
	var p eventstore.Position
	err := s.pool.QueryRow(ctx, `SELECT transaction_id, global_position FROM events
		WHERE transaction_id < pg_snapshot_xmin(pg_current_snapshot())
		ORDER BY transaction_id DESC, global_position DESC LIMIT 1`).Scan(&p.TxID, &p.Global)
	if errors.Is(err, pgx.ErrNoRows) {
		return eventstore.Position{}, nil
	}
	return p, storeError(err)
}

func (s *Store) query(ctx context.Context, sql string, args ...any) ([]eventstore.RecordedEvent, error) {
	rows, err := s.pool.Query(ctx, sql, args...)
	if err != nil {
		return nil, storeError(fmt.Errorf("eventstore: read: %w", err))
	}
	evs, err := ScanEvents(rows)
	return evs, storeError(err)
}

// ScanEvents reads rows of the columns of selectEvents: stream_id,
// stream_version, event_type, data, metadata, recorded_at,
// transaction_id::text, global_position.
func ScanEvents(rows pgx.Rows) ([]eventstore.RecordedEvent, error) {
	defer rows.Close()
	var out []eventstore.RecordedEvent
	var meta metadataCache
	for rows.Next() {
		e, err := scanEvent(rows, &meta)
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("eventstore: read: %w", err)
	}
	return out, nil
}

// metadataCache holds the last metadata decoded: the events of a commit
// share their metadata, so each distinct one is decoded once (Metadata is
// strings only, so copies share nothing mutable).
type metadataCache struct {
	raw     []byte
	decoded eventstore.Metadata
}

// scanEvent reads the current row of rows (the columns of selectEvents).
func scanEvent(rows pgx.Rows, meta *metadataCache) (eventstore.RecordedEvent, error) {
	var e eventstore.RecordedEvent
	var data, raw []byte
	var xid string
	if err := rows.Scan(&e.StreamID, &e.StreamVersion, &e.Type, &data, &raw, &e.RecordedAt, &xid, &e.Position.Global); err != nil {
		return e, fmt.Errorf("eventstore: read: %w", err)
	}
	e.Data = data
	if meta.raw != nil && bytes.Equal(raw, meta.raw) {
		e.Metadata = meta.decoded
	} else {
		if err := json.Unmarshal(raw, &e.Metadata); err != nil {
			return e, fmt.Errorf("eventstore: metadata of %s/%d: %w", e.StreamID, e.StreamVersion, err)
		}
		meta.raw, meta.decoded = raw, e.Metadata
	}
	var err error
	if e.Position.TxID, err = strconv.ParseUint(xid, 10, 64); err != nil {
		return e, err
	}
	e.RecordedAt = e.RecordedAt.UTC()
	return e, nil
}
