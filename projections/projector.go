// Package projections turns committed domain events into read-model rows.
//
// A Projector owns some read-model tables and applies events to them. Inline
// projectors run inside the event store's append transaction (a client reads
// its own write at once); async projectors are Watermill handlers that follow
// the log one commit per message and keep a checkpoint in the same
// transaction as their rows, so a redelivered commit is skipped.
//
// This package is the runtime only (checkpoints, catch-up, stalls,
// rebuild, status, lag, metrics) and knows no entity: the projectors live
// in its subpackages, one per family of read models (access, datatargets,
// retrieval, datasync, campaignstats), and a projector that holds personal
// data declares what it does on a forget (Forgetter).
package projections

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/clientele/clientele/eventstore"
	"github.com/clientele/clientele/internal/bus"
)

// Projector applies events to the read-model tables it owns.
type Projector interface {
	// Name is the projector's durable identifier: it keys the checkpoint and
	// the Watermill consumer group. Renaming it re-consumes the whole log.
	Name() string
	// Tables lists the tables the projector owns, in the public schema.
	// A rebuild recreates them empty (CREATE TABLE ... (LIKE ... INCLUDING
	// ALL)) in a scratch schema placed first on the search_path, replays
	// the log into them and swaps them in; so Apply must use unqualified
	// table names. The copies keep columns, defaults, constraints and
	// indexes, not foreign keys, triggers or grants: give the tables none,
	// and number rows with identity columns rather than serial (a copy would
	// share the old table's sequence, which is dropped with it).
	Tables() []string
	// Apply applies events in log order within tx. The events are one commit
	// (or, during a rebuild, a page of whole commits) and may be of any
	// type: ignore the ones you do not use. Write in bulk: one statement per
	// table per call where possible, never one round trip per event.
	Apply(ctx context.Context, tx pgx.Tx, events []eventstore.RecordedEvent) error
}

// TypeFilter is implemented by an async projector that uses events of a
// few types only: the runtime then reads just those of each commit (and
// skips Apply for a commit with none), instead of reading, decoding and
// handing it every event of, say, an import of customers. Apply must still
// ignore other types: a rebuild hands it every event.
type TypeFilter interface {
	// EventTypes lists the event types Apply uses.
	EventTypes() []string
}

// CommitFilter is implemented by an async projector that can tell from a
// commit's company, before reading it, that the commit is of no use to it
// (the datasync projector, for a company without datasync datatargets):
// the runtime then advances its checkpoint without reading the commit.
// Apply must still handle any commit: a rebuild hands it every one.
type CommitFilter interface {
	// WantsCommit reports, within the projector's transaction (tx has
	// locked its checkpoint), whether the commit h announces, all of
	// whose events belong to h.CompanyID, may concern it. h.Types may be
	// nil (unknown), never wrong.
	WantsCommit(ctx context.Context, tx pgx.Tx, h bus.CommitHeader) (bool, error)
}
