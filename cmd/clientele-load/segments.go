package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/jackc/pgx/v5"
)

// segmentFigures are what the segment_members projector did with a run
// (-end-to-end-only): how far behind the log it was when every record
// was retrievable, how long it then took to reach that head, and the
// facts it keeps (none for a company without a segment,
// docs/segments.md).
type segmentFigures struct {
	running  bool
	backlog  int64 // events after its checkpoint, up to the head, when the import was retrievable
	lag      time.Duration
	factRows int64 // segment_customers, segment_activity and segment_sales
}

// measureSegments reads the segment_members checkpoint against the head
// of the log, waits until it reaches that head, and counts the facts.
func measureSegments(ctx context.Context, conn *pgx.Conn) (segmentFigures, error) {
	var f segmentFigures
	start := time.Now()
	var head, cp string
	if err := conn.QueryRow(ctx, `SELECT transaction_id::text || ',' || global_position FROM events
		ORDER BY events.transaction_id DESC, events.global_position DESC LIMIT 1`).Scan(&head); err != nil {
		return f, err
	}
	err := conn.QueryRow(ctx, `SELECT transaction_id::text || ',' || global_position FROM projection_checkpoints
		WHERE name = 'segment_members'`).Scan(&cp)
	if errors.Is(err, pgx.ErrNoRows) {
		return f, nil // the projector does not run
	}
	if err != nil {
		return f, err
	}
	f.running = true
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM events
		WHERE (transaction_id, global_position) > (split_part($1, ',', 1)::xid8, split_part($1, ',', 2)::bigint)
		AND (transaction_id, global_position) <= (split_part($2, ',', 1)::xid8, split_part($2, ',', 2)::bigint)`,
		cp, head).Scan(&f.backlog); err != nil {
		return f, err
	}
	for {
		var fresh bool
		if err := conn.QueryRow(ctx, `SELECT (transaction_id, global_position) >= (split_part($1, ',', 1)::xid8, split_part($1, ',', 2)::bigint)
			FROM projection_checkpoints WHERE name = 'segment_members'`, head).Scan(&fresh); err != nil {
			return f, err
		}
		if fresh {
			break
		}
		if err := sleep(ctx, 50*time.Millisecond); err != nil {
			return f, err
		}
	}
	f.lag = time.Since(start)
	err = conn.QueryRow(ctx, `SELECT (SELECT count(*) FROM segment_customers) + (SELECT count(*) FROM segment_activity)
		+ (SELECT count(*) FROM segment_sales)`).Scan(&f.factRows)
	return f, err
}

func (f segmentFigures) print(w *os.File) {
	if !f.running {
		fmt.Fprintf(w, "segment_members:     not running\n")
		return
	}
	fmt.Fprintf(w, "segment_members:     %d events behind when retrievable, at the head %.1fs later; %d fact rows\n",
		f.backlog, f.lag.Seconds(), f.factRows)
}
