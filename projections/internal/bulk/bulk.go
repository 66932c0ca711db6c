package bulk

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/clientele/clientele/eventstore"
)

// Decode unmarshals an event's data, naming the event on failure.
func Decode(e eventstore.RecordedEvent, v any) error {
	if err := json.Unmarshal(e.Data, v); err != nil {
		return fmt.Errorf("projections: decode %s %s/%d: %w", e.Type, e.StreamID, e.StreamVersion, err)
	}
	return nil
}

// ExecRows runs sql with rows encoded as one JSON array in $1: statements
// read it with jsonb_to_recordset, so any number of rows is one statement.
// No rows, no statement.
func ExecRows[T any](ctx context.Context, tx pgx.Tx, name, sql string, rows []T) error {
	var b pgx.Batch
	if err := QueueRows(&b, name, sql, rows); err != nil || b.Len() == 0 {
		return err
	}
	return SendBatch(ctx, tx, name, &b)
}

// QueueRows is execRows for a statement sent later with others in b.
func QueueRows[T any](b *pgx.Batch, name, sql string, rows []T) error {
	if len(rows) == 0 {
		return nil
	}
	j, err := json.Marshal(rows)
	if err != nil {
		return fmt.Errorf("projections: %s: encode rows: %w", name, err)
	}
	b.Queue(sql, string(j))
	return nil
}

// SendBatch runs the statements of b in one round trip.
func SendBatch(ctx context.Context, tx pgx.Tx, name string, b *pgx.Batch) error {
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return fmt.Errorf("projections: %s: %w", name, err)
	}
	return nil
}

// OrNone turns a nil slice into an empty one, so that it encodes as [] and
// fits a NOT NULL array column.
func OrNone[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
