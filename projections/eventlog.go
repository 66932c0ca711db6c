package projections

import (
	"context"
	"fmt"

	"github.com/clientele/clientele/eventstore"
	"github.com/clientele/clientele/eventstore/postgres"
)

// EventLog is what the projection runtime and its projectors read of the
// log besides the port (eventstore.Store): the reads that the PostgreSQL
// log answers from its tables in the read models' transaction. Each
// method takes that querier q (the pool, or the transaction the caller
// runs in): PostgreSQL reads in it, so that the read sees what the
// caller's snapshot sees and LockAppends holds until it ends. A log kept
// elsewhere (EventStoreDB) ignores q, except LockAppends, which locks in
// it.
//
// Two implementations: PostgresLog, and esdb.Log (eventstore/esdb) for a
// log in EventStoreDB with the read models in PostgreSQL. Methods return
// the store's errors as they are: the caller says what it was doing.
type EventLog interface {
	// NextCommit returns the transaction id of the first commit with an
	// event after pos, if it is not after the commit of transaction
	// upTo, and false when there is none. upTo keeps it cheap: the commit
	// announced last (see postgres.Log.NextCommit).
	NextCommit(ctx context.Context, q postgres.Querier, pos eventstore.Position, upTo uint64) (uint64, bool, error)
	// CountEvents counts the events after `after` up to and including
	// upTo, each a position of an event or zero (as checkpoints and heads
	// are): a scan of what it counts (PostgreSQL: cheap for a lag, the
	// whole log from zero) or a subtraction (EventStoreDB).
	CountEvents(ctx context.Context, q postgres.Querier, after, upTo eventstore.Position) (int64, error)
	// CommitHasType reports whether the commit of transaction txID holds
	// an event of type eventType; an unknown commit holds none.
	CommitHasType(ctx context.Context, q postgres.Querier, txID uint64, eventType string) (bool, error)
	// ReadCompanyTypes returns, in log order, at most limit events of one
	// company whose type is one of types, strictly between the positions
	// after and before: a page of events, which may end inside a commit.
	// The caller must know that no event before `before` can still
	// appear.
	ReadCompanyTypes(ctx context.Context, q postgres.Querier, companyID string, types []string, after, before eventstore.Position, limit int) ([]eventstore.RecordedEvent, error)
	// ReadStreamsUpTo reads the events of each of streams from its start
	// up to and including its version in upto (upto[i] for streams[i]),
	// stream by stream in version order, the streams in the order of
	// their first events in the log (not of streams). A stream that does
	// not exist has no events; streams has no repeats.
	ReadStreamsUpTo(ctx context.Context, q postgres.Querier, streams []string, upto []int64) ([]eventstore.RecordedEvent, error)
	// EachEventRecorded calls fn with the company and the data of the
	// EventRecorded event of each pair (companies[i], ids[i]) whose data
	// has that "id" (the write side records one per id), in no
	// particular order. fn must not keep data.
	EachEventRecorded(ctx context.Context, q postgres.Querier, companies []string, ids []int64, fn func(companyID string, data []byte) error) error
	// LockAppends stops appends until the transaction tx ends (it must be
	// one) and waits for those under way to end, so that ReadAfter in tx
	// sees every commit there will be before tx ends. Readers of the log
	// are not stopped.
	LockAppends(ctx context.Context, tx postgres.Querier) error
	// ReadAfter returns every event after the position, in log order,
	// with no limit. Call it under LockAppends, where no commit can still
	// precede the last.
	ReadAfter(ctx context.Context, q postgres.Querier, after eventstore.Position) ([]eventstore.RecordedEvent, error)
}

// LogOrPostgres returns l, PostgresLog when it is nil.
func LogOrPostgres(l EventLog) EventLog {
	if l == nil {
		return PostgresLog{}
	}
	return l
}

// logReader is a projector that reads the log besides the port itself
// (Datasync): it must read the log the runtime or the rebuild reads, or it
// would answer from another log (a PostgreSQL log left empty, say).
type logReader interface {
	// EventLog is the log the projector reads.
	EventLog() EventLog
}

// checkLog reports a projector that reads another log than l.
func checkLog(p Projector, l EventLog) error {
	if r, ok := p.(logReader); ok && r.EventLog() != l {
		return fmt.Errorf("projections: projector %q reads another log (%T) than the runtime (%T): give it the same with WithLog", p.Name(), r.EventLog(), l)
	}
	return nil
}
