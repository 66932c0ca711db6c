package pgtest

import (
	"context"
	"strconv"
	"testing"

	"github.com/jackc/pgx/v5"
)

// Querier is what EventPositions reads with: a pool, a connection or a
// transaction.
type Querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// EventPositions returns the global positions of the events of the
// events table that where selects (an SQL condition over its columns,
// with args as $1...), as text (the update ids of datasync), in log
// order: by transaction, then position.
//
//	pgtest.EventPositions(t, pool, "company_id = $1 AND event_type LIKE 'Customer%'", companyID)
func EventPositions(tb testing.TB, q Querier, where string, args ...any) []string {
	tb.Helper()
	rows, err := q.Query(context.Background(), `SELECT global_position FROM events
		WHERE `+where+` ORDER BY transaction_id, global_position`, args...)
	if err != nil {
		tb.Fatal(err)
	}
	ps, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		tb.Fatal(err)
	}
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = strconv.FormatInt(p, 10)
	}
	return out
}
