package readmodels

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/clientele/clientele/eventstore"
	"github.com/clientele/clientele/storeerr"
)

// The read models' one boundary with the database: every read model
// reaches PostgreSQL through database, and CustomerHistory the event
// store through eventLog, which give each failure of the database the
// typed error of what it means to the caller (storeerr.Translate): text that
// PostgreSQL cannot compare or store (invalid UTF-8, U+0000) is the
// caller's domain.Invalid, a database that is away domain.Unavailable.
// The callers (api, the console, the SFTP drop directory) so map errors
// without knowing PostgreSQL, and no query of this package translates
// its own. The typed error wraps the original, which pg.Transient and
// errors.Is(err, pgx.ErrNoRows) still see; any other error (no rows, a
// scan into the wrong type) passes unchanged.

// querier is a pool or a transaction.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// batcher is a querier that sends batches: a pool or a transaction.
type batcher interface {
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

// database is a querier whose errors are translated (storeerr.Translate). It
// is a crypto.Querier too, for the data keys.
type database struct{ q querier }

// Query runs sql; the rows' Err and Scan are translated as well, since
// a connection lost mid-reply surfaces there.
func (d database) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	r, err := d.q.Query(ctx, sql, args...)
	if err != nil {
		return r, storeerr.Translate(err)
	}
	return rows{r}, nil
}

// Exec runs sql.
func (d database) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	tag, err := d.q.Exec(ctx, sql, args...)
	return tag, storeerr.Translate(err)
}

// SendBatch runs the statements of b in one round trip, and ends it. The
// querier must be a pool or a transaction (every read model's is).
func (d database) SendBatch(ctx context.Context, b *pgx.Batch) error {
	s, ok := d.q.(batcher)
	if !ok {
		return fmt.Errorf("readmodels: %T sends no batches", d.q)
	}
	return storeerr.Translate(s.SendBatch(ctx, b).Close())
}

// QueryRow runs sql for at most one row, as pgx's own QueryRow does with
// Query: Scan reports pgx.ErrNoRows when there is none.
func (d database) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	r, err := d.Query(ctx, sql, args...)
	return row{rows: r, err: err}
}

// rows translates the errors of pgx.Rows.
type rows struct{ pgx.Rows }

func (r rows) Err() error { return storeerr.Translate(r.Rows.Err()) }

func (r rows) Scan(dest ...any) error { return storeerr.Translate(r.Rows.Scan(dest...)) }

// row is the one row of QueryRow.
type row struct {
	rows pgx.Rows
	err  error
}

func (r row) Scan(dest ...any) error {
	if r.err != nil {
		return r.err
	}
	defer r.rows.Close()
	if !r.rows.Next() {
		if err := r.rows.Err(); err != nil {
			return err
		}
		return pgx.ErrNoRows
	}
	if err := r.rows.Scan(dest...); err != nil {
		return err
	}
	r.rows.Close()
	return r.rows.Err()
}

// streamReader is what CustomerHistory reads of the event store.
type streamReader interface {
	ReadStream(ctx context.Context, streamID string, afterVersion int64) ([]eventstore.RecordedEvent, error)
}

// eventLog is a streamReader whose errors are translated, as database's.
type eventLog struct{ store streamReader }

func (l eventLog) ReadStream(ctx context.Context, streamID string, afterVersion int64) ([]eventstore.RecordedEvent, error) {
	events, err := l.store.ReadStream(ctx, streamID, afterVersion)
	return events, storeerr.Translate(err)
}
