package projections

import (
	"context"

	"github.com/clientele/clientele/eventstore"
	"github.com/clientele/clientele/eventstore/postgres"
)

// PostgresLog is the EventLog of a log in PostgreSQL (eventstore/postgres),
// read in the read models' database: it must be the log's database. Each
// method is postgres.Log's of the same name, run in q: see there for what
// it costs and why.
type PostgresLog struct{}

var _ EventLog = PostgresLog{}

// NextCommit implements EventLog (postgres.Log.NextCommit).
func (PostgresLog) NextCommit(ctx context.Context, q postgres.Querier, pos eventstore.Position, upTo uint64) (uint64, bool, error) {
	return postgres.NewLog(q).NextCommit(ctx, pos, upTo)
}

// CountEvents implements EventLog (postgres.Log.CountEvents).
func (PostgresLog) CountEvents(ctx context.Context, q postgres.Querier, after, upTo eventstore.Position) (int64, error) {
	return postgres.NewLog(q).CountEvents(ctx, after, upTo)
}

// CommitHasType implements EventLog (postgres.Log.CommitHasType).
func (PostgresLog) CommitHasType(ctx context.Context, q postgres.Querier, txID uint64, eventType string) (bool, error) {
	return postgres.NewLog(q).CommitHasType(ctx, txID, eventType)
}

// ReadCompanyTypes implements EventLog (postgres.Log.ReadCompanyTypes).
func (PostgresLog) ReadCompanyTypes(ctx context.Context, q postgres.Querier, companyID string, types []string, after, before eventstore.Position, limit int) ([]eventstore.RecordedEvent, error) {
	return postgres.NewLog(q).ReadCompanyTypes(ctx, companyID, types, after, before, limit)
}

// ReadStreamsUpTo implements EventLog (postgres.Log.ReadStreamsUpTo).
func (PostgresLog) ReadStreamsUpTo(ctx context.Context, q postgres.Querier, streams []string, upto []int64) ([]eventstore.RecordedEvent, error) {
	return postgres.NewLog(q).ReadStreamsUpTo(ctx, streams, upto)
}

// EachEventRecorded implements EventLog (postgres.Log.EachEventRecorded).
func (PostgresLog) EachEventRecorded(ctx context.Context, q postgres.Querier, companies []string, ids []int64, fn func(companyID string, data []byte) error) error {
	return postgres.NewLog(q).EachEventRecorded(ctx, companies, ids, fn)
}

// LockAppends implements EventLog (postgres.Log.LockAppends: a lock of the
// events table, which an append's COPY waits for).
func (PostgresLog) LockAppends(ctx context.Context, tx postgres.Querier) error {
	return postgres.NewLog(tx).LockAppends(ctx)
}

// ReadAfter implements EventLog (postgres.Log.ReadAfter).
func (PostgresLog) ReadAfter(ctx context.Context, q postgres.Querier, after eventstore.Position) ([]eventstore.RecordedEvent, error) {
	return postgres.NewLog(q).ReadAfter(ctx, after)
}
