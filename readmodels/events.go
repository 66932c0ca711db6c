package readmodels

import (
	"context"

	"github.com/jackc/pgx/v5/pgxpool"
)

// Events reads the events read model (projections/retrieval.Events): the
// interface's Event entity, in the table activity_events (the log's own
// table is events).
type Events struct {
	db database
}

// NewEvents returns the queries on pool.
func NewEvents(pool *pgxpool.Pool) *Events {
	if pool == nil {
		panic("readmodels: NewEvents: nil pool")
	}
	return &Events{db: database{pool}}
}

// eventsTable is the retrieval shape of the activity_events table. Ids
// are integers given in import order, so pages are in that order, 9
// before 10. Deleted events are left out.
var eventsTable = docTable{name: "activity_events", id: "event_id", visible: "NOT is_deleted", numeric: true}

// Retrieve returns one page of the company's events in id order. The read
// model follows the log asynchronously: an event appears within moments
// of its import.
func (q *Events) Retrieve(ctx context.Context, pq PageQuery) (Page, error) {
	return eventsTable.page(ctx, q.db, pq)
}

// Stream reads the page that Retrieve returns and hands each document to
// each as it arrives; it returns Retrieve's Page.Next.
func (q *Events) Stream(ctx context.Context, pq PageQuery, each DocFunc) (next string, err error) {
	return eventsTable.stream(ctx, q.db, pq, each)
}
