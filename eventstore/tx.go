package eventstore

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/clientele/clientele/internal/wake"
)

// TxStore is the port the write side runs in: an event store whose
// commits join a transaction of write-side state, so that a command's
// state (an import run, a claimed name, inline read models, the outbox)
// and its events change together, or neither does. Write-side code runs
// its transaction through InTx, appends in it with AppendTx, and the store
// ends it: the commit point is the store's (PostgreSQL's COMMIT in the
// postgres adapter; the append to the commit stream in esdb's, which
// prepares the transaction first).
//
// The transaction is a pgx.Tx, said openly: write-side state lives in
// PostgreSQL whatever adapter holds the log, and the code that changes it
// (commands, the import pipeline, inline projectors, the outbox) writes
// SQL. An interface of this package over it would either copy pgx.Tx's
// methods or put a second data-access layer, with no second
// implementation, under every write; naming pgx.Tx keeps the dependency
// visible in one place, this port, instead.
type TxStore interface {
	Store
	// AppendTx appends the commit in tx, a transaction of InTx; the
	// transaction holds at most one (ErrTxHasCommit). After any error,
	// including a *ConflictError, the transaction must be rolled back.
	AppendTx(ctx context.Context, tx pgx.Tx, c Commit) (Committed, error)
	// InTx runs fn in a transaction and commits it unless fn fails (then
	// it is rolled back), with the commit fn staged, if any.
	InTx(ctx context.Context, fn func(tx pgx.Tx) error) error
	// AddHook adds a hook run in every commit's transaction; call it
	// before the store is used.
	AddHook(h TxHook)
}

// TxHook runs inside a commit's transaction, after the events are written
// and before the transaction commits: inline projections and the outbox
// publication of the commit. A hook's error aborts the whole commit.
type TxHook interface {
	AfterAppend(ctx context.Context, tx pgx.Tx, c Committed) error
}

// TxHookFunc adapts a function to TxHook.
type TxHookFunc func(ctx context.Context, tx pgx.Tx, c Committed) error

// AfterAppend calls f.
func (f TxHookFunc) AfterAppend(ctx context.Context, tx pgx.Tx, c Committed) error {
	return f(ctx, tx, c)
}

// ErrTxHasCommit reports a second AppendTx in one transaction: a commit is
// identified by its transaction, so a transaction holds at most one.
var ErrTxHasCommit = errors.New("eventstore: the transaction already holds a commit")

// CommitSource is a store that tells its own process of each of its
// commits: the consumers of the outbox wait for that signal when they
// found nothing, instead of polling again and again (bus.PostgresConfig.Wake).
type CommitSource interface {
	// Commits returns the signal fired after each commit of the store.
	Commits() *wake.Signal
}

// CommitsOf returns the commit signal s offers (CommitSource), or nil:
// the consumers of a store without one poll.
func CommitsOf(s Store) *wake.Signal {
	if cs, ok := s.(CommitSource); ok {
		return cs.Commits()
	}
	return nil
}
