package projections

import (
	"context"
	"log/slog"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/clientele/clientele/eventstore"
	"github.com/clientele/clientele/internal/bus"
)

// CommitPublisher is the event store hook that announces every commit to
// the async projectors: one message on bus.CommitsTopic, written inside
// the commit's transaction (the outbox, bus.PublishCommit), so that the
// message exists exactly when the commit does. The zero value is ready to
// use.
type CommitPublisher struct {
	// Logger receives the publisher's trace logs; nil discards them.
	Logger *slog.Logger
}

var _ eventstore.TxHook = CommitPublisher{}

// AfterAppend writes the commit's message in tx.
func (p CommitPublisher) AfterAppend(ctx context.Context, tx pgx.Tx, c eventstore.Committed) error {
	return bus.PublishCommit(ctx, tx, HeaderOf(c), p.Logger)
}

// HeaderOf describes a commit as its message announces it.
func HeaderOf(c eventstore.Committed) bus.CommitHeader {
	h := bus.CommitHeader{TxID: c.TxID, First: c.First.Global, Last: c.Last.Global, Count: len(c.Events), Types: []string{}}
	if len(c.Events) > 0 {
		h.CompanyID = c.Events[0].Metadata.CompanyID
	}
	for _, e := range c.Events {
		if i, found := slices.BinarySearch(h.Types, e.Type); !found {
			h.Types = slices.Insert(h.Types, i, e.Type)
		}
	}
	return h
}

// lastPosition is the log position of the last event of the commit h
// announces.
func lastPosition(h bus.CommitHeader) eventstore.Position {
	return eventstore.Position{TxID: h.TxID, Global: h.Last}
}
