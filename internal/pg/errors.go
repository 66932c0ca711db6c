package pg

import (
	"context"
	"errors"
	"net"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
)

// Transient reports whether err is a failure that the same work may not
// meet again: the server is unreachable, restarting or shutting down,
// out of connections, or the transaction lost a serialization race or a
// deadlock. Work that failed so is retried as it is. Any other error
// (a value the server refuses, a broken constraint, a bug) fails the same
// way every time: callers may then look for the record that causes it.
//
// A cancelled or expired context is transient: the caller is stopping,
// and the work must not be judged by it.
func Transient(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
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
	var connErr *pgconn.ConnectError
	return errors.As(err, &connErr) || strings.Contains(err.Error(), "conn closed") ||
		strings.Contains(err.Error(), "closed pool") || strings.Contains(err.Error(), "unexpected EOF")
}

// transientState reports whether an SQLSTATE names a condition of the
// server or of concurrency rather than of the data.
func transientState(code string) bool {
	switch {
	case strings.HasPrefix(code, "08"): // connection exception
		return true
	case strings.HasPrefix(code, "53"): // insufficient resources (too many connections, disk full)
		return true
	case strings.HasPrefix(code, "57"): // operator intervention (admin shutdown, cannot connect now)
		return true
	case strings.HasPrefix(code, "58"): // system error (I/O)
		return true
	case code == "40001" || code == "40P01": // serialization failure, deadlock
		return true
	case code == "55P03": // lock not available
		return true
	}
	return false
}
