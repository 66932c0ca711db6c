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
//
// The bound is server-wide: any open transaction on the server, in any
// database, holds every reader back until it ends. Keep writing
// transactions short.
//
// Errors are the port's: a version conflict is a *eventstore.ConflictError,
// and a database that cannot be reached or answer now is
// eventstore.ErrUnavailable wrapping PostgreSQL's error (errors.go).
package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/clientele/clientele/eventstore"
	"github.com/clientele/clientele/internal/wake"
)

// Store is the PostgreSQL event store.
type Store struct {
	pool  *pgxpool.Pool
	hooks []eventstore.TxHook
	// commits fires after each transaction of the store commits.
	commits wake.Signal
	// Now is the clock stamped on recorded events.
	Now func() time.Time
}

var _ eventstore.Store = (*Store)(nil)

// New returns a store on pool. Hooks run in every append transaction, in
// order.
func New(pool *pgxpool.Pool, hooks ...eventstore.TxHook) *Store {
	return &Store{pool: pool, hooks: hooks, Now: time.Now}
}

// AddHook adds a hook; call it before the store is used.
func (s *Store) AddHook(h eventstore.TxHook) { s.hooks = append(s.hooks, h) }

// Pool returns the store's connection pool.
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

var (
	_ eventstore.TxStore      = (*Store)(nil)
	_ eventstore.CommitSource = (*Store)(nil)
)

// Commits fires after each transaction of the store (Append, InTx)
// commits: the outbox's subscribers in this process wait on it when they
// found nothing (bus.PostgresConfig.Wake), so that a commit's message is
// read at once rather than at the next poll.
func (s *Store) Commits() *wake.Signal { return &s.commits }

// InTx runs fn in a transaction on the store's pool and commits it
// (pgx.BeginFunc): here the commit point is PostgreSQL's COMMIT.
func (s *Store) InTx(ctx context.Context, fn func(tx pgx.Tx) error) error {
	if err := pgx.BeginFunc(ctx, s.pool, fn); err != nil {
		return err
	}
	s.commits.Notify()
	return nil
}

// Append writes the commit in its own transaction.
func (s *Store) Append(ctx context.Context, c eventstore.Commit) (eventstore.Committed, error) {
	var out eventstore.Committed
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var err error
		out, err = s.AppendTx(ctx, tx, c)
		return err
	})
	if err != nil {
		return eventstore.Committed{}, storeError(err)
	}
	s.commits.Notify()
	return out, nil
}
