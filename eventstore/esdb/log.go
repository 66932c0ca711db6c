package esdb

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"math/big"
	"slices"
	"strconv"

	"github.com/clientele/clientele/eventstore"
)

// recordedType is the one event type EachEventRecorded looks for, as
// postgres.Log's: an index in PostgreSQL, a walk here.
const recordedType = "EventRecorded"

// Log is the eventstore.EventLog (what the projection runtime reads of
// the log besides Store) of a log in EventStoreDB with read models in
// PostgreSQL: each method is postgres.Log's of the same name, with the
// same answers on the same commits (projections' TestEventLogs), read
// from the commit stream; where they differ, the method says. The querier
// q of the read models is unused, except by LockAppends.
//
// Unlike postgres.Log's, these reads are not in the caller's snapshot:
// they see the commit stream as it is when they read it. A projector is
// given a commit only once it is in the commit stream, and records are
// never rewritten, so what they read up to that commit is what a
// PostgreSQL snapshot would show.
type Log struct {
	s *Store
}

var _ eventstore.EventLog = Log{}

// NewLog returns the log of s.
func NewLog(s *Store) Log { return Log{s: s} }

// NextCommit returns the transaction id of the first commit with an event
// after pos, if it is not after the commit of transaction upTo, and false
// when there is none. It reads the records from pos's up to upTo's, and
// decodes only their streams: for a projector caught up to upTo, one
// record.
func (l Log) NextCommit(ctx context.Context, _ eventstore.Querier, pos eventstore.Position, upTo uint64) (uint64, bool, error) {
	from := revision(pos)
	if upTo <= from {
		return 0, false, nil // records from..upTo-1
	}
	var tx uint64
	err := l.s.readRecords(ctx, from, upTo-from, func(rev uint64, data []byte) (bool, error) {
		span, err := decodeSpan(rev, data)
		if err != nil {
			return false, err
		}
		// A record with no event (void) has no position: skip it.
		if span.Count == 0 || !pos.Less(eventstore.Position{TxID: rev + 1, Global: span.Last}) {
			return true, nil
		}
		tx = rev + 1
		return false, nil
	})
	if err != nil || tx == 0 {
		return 0, false, err
	}
	return tx, true, nil
}

// CountEvents counts the events after `after` up to and including upTo,
// from their positions alone, reading nothing: Global counts the events
// from 1 without gap, in the log's order, so the count is the difference
// of the bounds' Global. Both must be positions of events or zero (as
// checkpoints, heads and the positions of read events are); a position
// between two events, which the PostgreSQL log counts by its place, is
// not supported. atMost, above zero, caps the count.
func (Log) CountEvents(_ context.Context, _ eventstore.Querier, after, upTo eventstore.Position, atMost int64) (int64, error) {
	if !after.Less(upTo) {
		return 0, nil
	}
	n := upTo.Global - after.Global
	if atMost > 0 {
		n = min(n, atMost)
	}
	return n, nil
}

// CommitHasType reports whether the commit of transaction txID holds an
// event of type eventType (Store.ReadCommitTypes: the commit's record,
// with all the parts of a large commit).
func (l Log) CommitHasType(ctx context.Context, _ eventstore.Querier, txID uint64, eventType string) (bool, error) {
	evs, _, err := l.s.ReadCommitTypes(ctx, txID, []string{eventType})
	return len(evs) > 0, err
}

// ReadCompanyTypes returns, in log order, at most limit events of one
// company whose type is one of types, strictly between the positions
// after and before: a page of events, which may end inside a commit.
//
// It reads the company's commits with ReadCompanyLog, and so every
// record of the range, of every company: its cost is the log from after
// to before (the data sync's backlog, once per datatarget that starts
// from the start of the log, reads the whole log before its creation).
func (l Log) ReadCompanyTypes(ctx context.Context, _ eventstore.Querier, companyID string, types []string, after, before eventstore.Position, limit int) ([]eventstore.RecordedEvent, error) {
	if limit <= 0 || !after.Less(before) || before.Global == 0 {
		return nil, nil
	}
	// Strictly before `before` is up to the event before it: globals
	// have no gap, and follow the log's order.
	upTo := eventstore.Position{TxID: before.TxID, Global: before.Global - 1}
	var out []eventstore.RecordedEvent
	for cur := after; ; {
		evs, err := l.s.ReadCompanyLog(ctx, companyID, cur, upTo, limit)
		if err != nil {
			return nil, err
		}
		for _, e := range evs {
			if slices.Contains(types, e.Type) {
				out = append(out, e)
				if len(out) == limit {
					return out, nil
				}
			}
		}
		if len(evs) < limit {
			return out, nil // the range is read to its end
		}
		cur = evs[len(evs)-1].Position
	}
}

// ReadStreamsUpTo reads the events of each of streams from its start up
// to and including its version in upto (upto[i] for streams[i]), stream
// by stream in version order, the streams in the order of their first
// events (PostgreSQL's stream_key). Each stream is one ReadStream: every
// record of the stream, those after its upto too.
func (l Log) ReadStreamsUpTo(ctx context.Context, _ eventstore.Querier, streams []string, upto []int64) ([]eventstore.RecordedEvent, error) {
	if len(streams) != len(upto) {
		return nil, fmt.Errorf("esdb: %d streams and %d versions", len(streams), len(upto))
	}
	var read [][]eventstore.RecordedEvent
	for i, id := range streams {
		evs, err := l.s.ReadStream(ctx, id, 0)
		if err != nil {
			return nil, err
		}
		evs = slices.DeleteFunc(evs, func(e eventstore.RecordedEvent) bool { return e.StreamVersion > upto[i] })
		if len(evs) > 0 {
			read = append(read, evs)
		}
	}
	slices.SortFunc(read, func(a, b []eventstore.RecordedEvent) int {
		return cmp.Compare(a[0].Position.Global, b[0].Position.Global)
	})
	return slices.Concat(read...), nil
}

// EachEventRecorded calls fn with the company and the data of the
// EventRecorded event of each pair (companies[i], ids[i]) whose data has
// that "id" (a JSON number equal to it), in log order. fn must not keep
// data.
//
// The commit stream has no index by a field of an event's data, nor by
// company: it reads and decodes every record of the log, from the first,
// and the parts of the named companies' large commits. Its cost is the
// whole log per call (the data sync calls it for the deletions of events
// recorded in an earlier commit).
func (l Log) EachEventRecorded(ctx context.Context, _ eventstore.Querier, companies []string, ids []int64, fn func(companyID string, data []byte) error) error {
	if len(companies) != len(ids) {
		return fmt.Errorf("esdb: %d companies and %d ids", len(companies), len(ids))
	}
	if len(ids) == 0 {
		return nil
	}
	type pair struct {
		company string
		id      int64
	}
	want := map[pair]int{} // how many times the pair is asked
	byCompany := map[string]bool{}
	for i, c := range companies {
		want[pair{c, ids[i]}]++
		byCompany[c] = true
	}
	return l.s.eachRecord(ctx, func(rev uint64, rec *record) error {
		if !byCompany[rec.Metadata.CompanyID] {
			return nil
		}
		evs, err := l.s.commitEvents(ctx, rev, rec, all)
		if err != nil {
			return err
		}
		for _, e := range evs {
			if e.Type != recordedType {
				continue
			}
			id, ok, err := dataID(e.Data)
			if err != nil {
				return fmt.Errorf("esdb: event at %s: %w", e.Position, err)
			}
			if !ok {
				continue
			}
			for range want[pair{rec.Metadata.CompanyID, id}] {
				if err := fn(rec.Metadata.CompanyID, e.Data); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

// dataID returns the "id" of an event's data when it is a JSON number
// that is an integer (PostgreSQL compares jsonb numbers by value: 7.0 is
// 7), and false otherwise.
func dataID(data []byte) (int64, bool, error) {
	var d struct {
		ID json.RawMessage `json:"id"`
	}
	if err := json.Unmarshal(data, &d); err != nil {
		return 0, false, err
	}
	raw := bytes.TrimSpace(d.ID)
	if len(raw) == 0 || (raw[0] != '-' && (raw[0] < '0' || raw[0] > '9')) {
		return 0, false, nil // absent, null, a string, ...
	}
	if id, err := strconv.ParseInt(string(raw), 10, 64); err == nil {
		return id, true, nil
	}
	r, ok := new(big.Rat).SetString(string(raw))
	if !ok || !r.IsInt() || !r.Num().IsInt64() {
		return 0, false, nil
	}
	return r.Num().Int64(), true, nil
}

// LockAppends stops the appends of every Store coupled with PostgreSQL
// until the transaction tx ends (it must be one, in the database the
// stores are coupled with): it takes AppendLockKey exclusive, which each
// of their commits takes shared before its transaction is prepared and
// keeps until it is decided. Once it is held, every commit under way has
// either written its record or will not, and no other can start: the
// commit stream ends where it will stay until tx ends. Appends of a
// Store that is not coupled are not stopped.
func (Log) LockAppends(ctx context.Context, tx eventstore.Querier) error {
	_, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, AppendLockKey)
	return err
}

// ReadAfter returns every event after the position, in log order, to the
// end of the commit stream. Call it under LockAppends, where that end
// stays.
func (l Log) ReadAfter(ctx context.Context, _ eventstore.Querier, after eventstore.Position) ([]eventstore.RecordedEvent, error) {
	// The index follows too, so that Head is not behind what was read.
	if err := l.s.catchUp(ctx); err != nil {
		return nil, err
	}
	var out []eventstore.RecordedEvent
	for {
		evs, err := l.s.ReadLog(ctx, after, catchUpBatch)
		if err != nil {
			return nil, err
		}
		if len(evs) == 0 {
			return out, nil
		}
		out = append(out, evs...)
		after = evs[len(evs)-1].Position
	}
}

// eachRecord calls fn with every record of the commit stream, in
// revision order, until it returns an error.
func (s *Store) eachRecord(ctx context.Context, fn func(rev uint64, rec *record) error) error {
	for from := uint64(0); ; {
		n := uint64(0)
		err := s.readRecords(ctx, from, catchUpBatch, func(rev uint64, data []byte) (bool, error) {
			n++
			var rec record
			if err := decodeRecord(rev, data, &rec); err != nil {
				return false, err
			}
			return true, fn(rev, &rec)
		})
		if err != nil || n < catchUpBatch {
			return err
		}
		from += n
	}
}

// decodeSpan returns the span of the record of revision rev, decoding
// only its streams.
func decodeSpan(rev uint64, data []byte) (eventstore.CommitSpan, error) {
	var rec record
	if err := json.Unmarshal(data, &struct {
		FirstGlobal *int64        `json:"first_global"`
		Streams     *[]streamPart `json:"streams"`
	}{&rec.FirstGlobal, &rec.Streams}); err != nil {
		return eventstore.CommitSpan{}, fmt.Errorf("esdb: commit record %d: %w", rev, err)
	}
	return rec.span(), nil
}

// EventLog returns the store's log (NewLog).
func (s *Store) EventLog() eventstore.EventLog { return NewLog(s) }
