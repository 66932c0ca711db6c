package bus

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// pruneBatch is the number of outbox rows one pruning statement deletes:
// each is its own short transaction, since a long one would hold back
// pg_snapshot_xmin and so every reader of the log.
const pruneBatch = 10_000

// Prune deletes the messages of topic that every one of groups has acked,
// and returns how many it deleted. A message is kept while any of the
// groups has not consumed it, and nothing is deleted while a group has
// not consumed anything yet. Groups not listed (a projector that no longer
// exists) do not hold messages back: a consumer group added later starts
// after the pruned messages, which is why consumers that must see the
// whole log read it from the event store, not from the outbox (the
// projection runtime catches up from the log, see projections/catchup.go).
func Prune(ctx context.Context, pool *pgxpool.Pool, topic string, groups []string) (int64, error) {
	if len(groups) == 0 {
		return 0, nil
	}
	messages := pgx.Identifier{"watermill_" + topic}.Sanitize()
	offsets := pgx.Identifier{"watermill_offsets_" + topic}.Sanitize()
	// The oldest position any group acked, as watermill-sql orders
	// messages: (transaction_id, offset). The ORDER BY names the table's
	// columns: the bare names would be the text output columns, and
	// "1000" sorts before "999".
	var n int
	var tx, off *string
	err := pool.QueryRow(ctx, `SELECT count(*) OVER (), o.last_processed_transaction_id::text, o.offset_acked::text
		FROM `+offsets+` o WHERE o.consumer_group = ANY($1)
		ORDER BY o.last_processed_transaction_id, o.offset_acked LIMIT 1`, groups).Scan(&n, &tx, &off)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("bus: prune %s: %w", topic, err)
	}
	if n < len(groups) || tx == nil || off == nil {
		return 0, nil
	}
	var total int64
	for {
		tag, err := pool.Exec(ctx, `DELETE FROM `+messages+` WHERE ctid IN (
			SELECT ctid FROM `+messages+` WHERE (transaction_id, "offset") <= ($1::text::xid8, $2::bigint) LIMIT $3)`,
			*tx, *off, pruneBatch)
		if err != nil {
			return total, fmt.Errorf("bus: prune %s: %w", topic, err)
		}
		total += tag.RowsAffected()
		if tag.RowsAffected() < pruneBatch || ctx.Err() != nil {
			return total, nil
		}
	}
}
