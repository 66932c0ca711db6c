package postgres

import (
	"context"

	"github.com/clientele/clientele/eventstore"
)

// EventLog is the eventstore.EventLog of a log in PostgreSQL, read in the
// read models' database: it must be the log's database. Each method is
// Log's of the same name, run in q: see there for what it costs and why.
type EventLog struct{}

var _ eventstore.EventLog = EventLog{}

// NextCommit implements eventstore.EventLog (Log.NextCommit).
func (EventLog) NextCommit(ctx context.Context, q eventstore.Querier, pos eventstore.Position, upTo uint64) (uint64, bool, error) {
	return NewLog(q).NextCommit(ctx, pos, upTo)
}

// CountEvents implements eventstore.EventLog (Log.CountEvents).
func (EventLog) CountEvents(ctx context.Context, q eventstore.Querier, after, upTo eventstore.Position, atMost int64) (int64, error) {
	return NewLog(q).CountEvents(ctx, after, upTo, atMost)
}

// CommitHasType implements eventstore.EventLog (Log.CommitHasType).
func (EventLog) CommitHasType(ctx context.Context, q eventstore.Querier, txID uint64, eventType string) (bool, error) {
	return NewLog(q).CommitHasType(ctx, txID, eventType)
}

// ReadCompanyTypes implements eventstore.EventLog (Log.ReadCompanyTypes).
func (EventLog) ReadCompanyTypes(ctx context.Context, q eventstore.Querier, companyID string, types []string, after, before eventstore.Position, limit int) ([]eventstore.RecordedEvent, error) {
	return NewLog(q).ReadCompanyTypes(ctx, companyID, types, after, before, limit)
}

// ReadStreamsUpTo implements eventstore.EventLog (Log.ReadStreamsUpTo).
func (EventLog) ReadStreamsUpTo(ctx context.Context, q eventstore.Querier, streams []string, upto []int64) ([]eventstore.RecordedEvent, error) {
	return NewLog(q).ReadStreamsUpTo(ctx, streams, upto)
}

// EachEventRecorded implements eventstore.EventLog (Log.EachEventRecorded).
func (EventLog) EachEventRecorded(ctx context.Context, q eventstore.Querier, companies []string, ids []int64, fn func(companyID string, data []byte) error) error {
	return NewLog(q).EachEventRecorded(ctx, companies, ids, fn)
}

// LockAppends implements eventstore.EventLog (Log.LockAppends: a lock of
// the events table, which an append's COPY waits for).
func (EventLog) LockAppends(ctx context.Context, tx eventstore.Querier) error {
	return NewLog(tx).LockAppends(ctx)
}

// ReadAfter implements eventstore.EventLog (Log.ReadAfter).
func (EventLog) ReadAfter(ctx context.Context, q eventstore.Querier, after eventstore.Position) ([]eventstore.RecordedEvent, error) {
	return NewLog(q).ReadAfter(ctx, after)
}

// EventLog returns the store's log, read in the store's database.
func (s *Store) EventLog() eventstore.EventLog { return EventLog{} }
