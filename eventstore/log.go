package eventstore

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Querier is a pool, a connection or a transaction of the PostgreSQL
// database that holds the write-side state and the read models: what
// EventLog's reads run in, and what the postgres adapter reads its log
// through.
//
// It names pgx's types openly, for TxStore's reason: write-side and
// read-model state live in PostgreSQL whichever adapter holds the log, so
// a read of the log that must see what a read model's transaction sees,
// or lock appends until it ends, takes that transaction, whichever
// adapter answers it.
type Querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// EventLog is the port of what the projection runtime and its projectors
// read of the log besides Store: the reads that the PostgreSQL log answers
// from its tables in the read models' transaction. Each method takes that
// querier q (the pool, or the transaction the caller runs in): PostgreSQL
// reads in it, so that the read sees what the caller's snapshot sees and
// LockAppends holds until it ends. A log kept elsewhere (EventStoreDB)
// ignores q, except LockAppends, which locks in it: the read models stay
// in PostgreSQL whichever adapter holds the log (see Querier).
//
// Two implementations: postgres.EventLog (eventstore/postgres), and
// esdb.Log (eventstore/esdb) for a log in EventStoreDB with the read
// models in PostgreSQL. Methods return the store's errors as they are:
// the caller says what it was doing.
type EventLog interface {
	// NextCommit returns the transaction id of the first commit with an
	// event after pos, if it is not after the commit of transaction
	// upTo, and false when there is none. upTo keeps it cheap: the commit
	// announced last (see postgres.Log.NextCommit).
	NextCommit(ctx context.Context, q Querier, pos Position, upTo uint64) (uint64, bool, error)
	// CountEvents counts the events after `after` up to and including
	// upTo, each a position of an event or zero (as checkpoints and heads
	// are), but no more than atMost when it is above zero: a scan of what
	// it counts (PostgreSQL: cheap for a small lag, the whole log from
	// zero; atMost bounds it) or a subtraction (EventStoreDB).
	CountEvents(ctx context.Context, q Querier, after, upTo Position, atMost int64) (int64, error)
	// CommitHasType reports whether the commit of transaction txID holds
	// an event of type eventType; an unknown commit holds none.
	CommitHasType(ctx context.Context, q Querier, txID uint64, eventType string) (bool, error)
	// ReadCompanyTypes returns, in log order, at most limit events of one
	// company whose type is one of types, strictly between the positions
	// after and before: a page of events, which may end inside a commit.
	// The caller must know that no event before `before` can still
	// appear.
	ReadCompanyTypes(ctx context.Context, q Querier, companyID string, types []string, after, before Position, limit int) ([]RecordedEvent, error)
	// ReadStreamsUpTo reads the events of each of streams from its start
	// up to and including its version in upto (upto[i] for streams[i]),
	// stream by stream in version order, the streams in the order of
	// their first events in the log (not of streams). A stream that does
	// not exist has no events; streams has no repeats.
	ReadStreamsUpTo(ctx context.Context, q Querier, streams []string, upto []int64) ([]RecordedEvent, error)
	// EachEventRecorded calls fn with the company and the data of the
	// EventRecorded event of each pair (companies[i], ids[i]) whose data
	// has that "id" (the write side records one per id), in no
	// particular order. fn must not keep data.
	EachEventRecorded(ctx context.Context, q Querier, companies []string, ids []int64, fn func(companyID string, data []byte) error) error
	// LockAppends stops appends until the transaction tx ends (it must be
	// one) and waits for those under way to end, so that ReadAfter in tx
	// sees every commit there will be before tx ends. Readers of the log
	// are not stopped.
	LockAppends(ctx context.Context, tx Querier) error
	// ReadAfter returns every event after the position, in log order,
	// with no limit. Call it under LockAppends, where no commit can still
	// precede the last.
	ReadAfter(ctx context.Context, q Querier, after Position) ([]RecordedEvent, error)
}

// LogSource is a Store that reads its own log as an EventLog. The
// projection runtime, given no log, reads the one its store offers.
type LogSource interface {
	// EventLog returns the store's log; nil when it has none.
	EventLog() EventLog
}

// LogOf returns the EventLog s offers (LogSource), or nil.
func LogOf(s Store) EventLog {
	if ls, ok := s.(LogSource); ok {
		return ls.EventLog()
	}
	return nil
}
