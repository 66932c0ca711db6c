package pg

import (
	"context"
	"database/sql/driver"
	"errors"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync/atomic"

	"github.com/jackc/pgx/v5/pgconn"
)

// Transient reports whether err is a failure that the same work may not
// meet again: the server is unreachable, restarting or shutting down,
// out of connections, read-only for a moment (a failover), or the
// transaction lost a serialization race or a deadlock. Work that failed
// so is retried as it is, and a client is told to come back (503 with
// Retry-After). Any other error (a value the server refuses, a broken
// constraint, a bug) fails the same way every time: callers may then look
// for the record that causes it.
//
// A cancelled or expired context is transient: the caller is stopping,
// or waited for a connection longer than Open allows, and the work must
// not be judged by it. So is an error that says so itself, by a method
// Transient() bool that returns true: a server other than PostgreSQL
// that cannot be reached (eventstore.ErrUnavailable, EventStoreDB's
// outage), classified without this package knowing it.
//
// A connection that the server drops mid-reply fails with a bare
// io.ErrUnexpectedEOF (pgx), which is therefore transient too: code that
// reads anything else (a request body) must say so itself when that
// reader ends early.
func Transient(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	var says interface{ Transient() bool }
	if errors.As(err, &says) && says.Transient() {
		return true
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return transientState(pgErr.Code)
	}
	var netErr net.Error
	if errors.As(err, &netErr) || pgconn.SafeToRetry(err) || pgconn.Timeout(err) {
		return true
	}
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, driver.ErrBadConn) {
		return true
	}
	var connErr *pgconn.ConnectError
	return errors.As(err, &connErr) || strings.Contains(err.Error(), "conn closed") ||
		strings.Contains(err.Error(), "closed pool")
}

// UnstorableText reports whether err is PostgreSQL's refusal of a text
// value for its characters: invalid UTF-8 (SQLSTATE 22021), or U+0000 in
// text or jsonb (22P05). Such text got past validation: it is the
// caller's input that is at fault, not the database.
func UnstorableText(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && (pgErr.Code == "22021" || pgErr.Code == "22P05")
}

// SchemaMismatch reports whether err is PostgreSQL's complaint about the
// statement or the schema rather than about a value (SQLSTATE class 42:
// an undefined table or column, a missing privilege, a syntax error): the
// code and the database disagree, as an older binary meets during a
// rolling deploy once a migration renamed a column it names. No record
// and no commit is at fault, and none must be rejected or set aside for
// it: like an outage (Transient), the work stops and is retried as it is,
// and applies once the binary and the schema agree again.
func SchemaMismatch(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && strings.HasPrefix(pgErr.Code, "42")
}

// Level is the level at which a loop that retries logs a failed attempt:
// a warning while the database is unavailable (Transient: the work goes
// on by itself once it is back, and readiness and the 503 answers say so
// meanwhile), an error otherwise, which someone has to look at.
func Level(err error) slog.Level {
	if Transient(err) {
		return slog.LevelWarn
	}
	return slog.LevelError
}

// transientState reports whether an SQLSTATE names a condition of the
// server or of concurrency rather than of the data.
func transientState(code string) bool {
	switch {
	case strings.HasPrefix(code, "08"): // connection exception
		return true
	case strings.HasPrefix(code, "53"): // insufficient resources (too many connections, disk full)
		return true
	case strings.HasPrefix(code, "57"): // operator intervention (admin shutdown, cannot connect now, crash of another backend)
		return true
	case strings.HasPrefix(code, "58"): // system error (I/O)
		return true
	case code == "40001" || code == "40P01": // serialization failure, deadlock
		return true
	case code == "55P03": // lock not available
		return true
	case code == "25006": // read-only transaction: a standby or a demoted primary during a failover
		return true
	}
	return false
}

// Outage follows the failures of a loop that retries its work every
// moment (a subscriber's poll, the delivery dispatcher), so that it logs
// a database outage when it starts and when it ends instead of at every
// retry, which would bury the rest of the log for as long as the outage
// lasts. The zero value is ready to use; it is safe for concurrent use.
type Outage struct{ down atomic.Bool }

// Failed records a failure of the loop and reports whether to log it:
// an error that is not Transient always, a transient one only when it is
// the first since the loop last succeeded.
func (o *Outage) Failed(err error) bool {
	if !Transient(err) {
		return true
	}
	return !o.down.Swap(true)
}

// Succeeded records a success of the loop and reports whether it ends an
// outage (a transient failure came before it), worth one line of log.
func (o *Outage) Succeeded() bool { return o.down.Swap(false) }
