package datasync

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/clientele/clientele/eventstore"
)

// catalogFeed is the datasync feed of a catalog entity (products, shops):
// one event type, one stream per entity, values in clear. It folds each
// changed entity's stream, up to the change, with the entity projector's
// own code (fold: applyProduct, applyShop), so a message shows exactly
// what retrieval shows. Its datasync_<datatype>.go says which entity.
//
// Like the customers feed it reads each changed entity's whole history
// per call, in one query: fine while streams stay short; a long-lived
// entity changed daily would want a snapshot table.
type catalogFeed struct {
	name      string // the datatype, for errors
	eventType string
	// always are the fields every message carries whatever the
	// datatarget's fields: the entity's identity and deletion.
	always []string
	// fold decodes the event and applies it to the entity's retrieval
	// document, returning the entity's id.
	fold func(e eventstore.RecordedEvent, doc map[string]any) (string, error)
	// deleted reports whether the document is of a deleted entity (nil:
	// the entity cannot be deleted).
	deleted func(doc map[string]any) bool
}

func (f catalogFeed) eventTypes() []string { return []string{f.eventType} }

func (f catalogFeed) alwaysSent() []string { return f.always }

func (f catalogFeed) states(ctx context.Context, tx pgx.Tx, log eventstore.EventLog, changes []*eventstore.RecordedEvent) ([]entityState, error) {
	history, at, err := readChangedStreams(ctx, tx, log, changes)
	if err != nil {
		return nil, fmt.Errorf("projections: datasync: %s: %w", f.name, err)
	}

	out := make([]entityState, len(changes))
	filled := 0
	var doc map[string]any
	for i := range history {
		e := &history[i]
		if doc == nil || e.StreamID != history[i-1].StreamID {
			doc = map[string]any{}
		}
		id, err := f.fold(*e, doc)
		if err != nil {
			return nil, err
		}
		j, ok := at[e.Position.Global]
		if !ok {
			continue
		}
		if out[j], err = f.state(id, doc); err != nil {
			return nil, err
		}
		filled++
	}
	if filled != len(changes) {
		return nil, fmt.Errorf("projections: datasync: %s: %d of %d changes found in their streams", f.name, filled, len(changes))
	}
	return out, nil
}

// state encodes the document now: it goes on changing (its nested
// objects in place, too) as later events are folded.
func (f catalogFeed) state(id string, doc map[string]any) (entityState, error) {
	st := entityState{id: id}
	if f.deleted != nil {
		st.deleted = f.deleted(doc)
	}
	var err error
	if st.fields, err = encodeFields(doc); err != nil {
		return st, fmt.Errorf("projections: datasync: %s %s: %w", f.name, id, err)
	}
	return st, nil
}

// readChangedStreams reads the streams of changes from their start up to
// the last change of each (postgres.Log.ReadStreamsUpTo), and returns them with, by
// global position, the index in changes of each change: a feed folds
// each stream and takes the entity's state at each change.
func readChangedStreams(ctx context.Context, tx pgx.Tx, log eventstore.EventLog, changes []*eventstore.RecordedEvent) ([]eventstore.RecordedEvent, map[int64]int, error) {
	var streams []string
	var upto []int64
	index := map[string]int{}               // stream -> its place in streams
	at := make(map[int64]int, len(changes)) // global position -> change
	for i, e := range changes {
		j, ok := index[e.StreamID]
		if !ok {
			j = len(streams)
			index[e.StreamID] = j
			streams, upto = append(streams, e.StreamID), append(upto, 0)
		}
		upto[j] = max(upto[j], e.StreamVersion)
		at[e.Position.Global] = i
	}
	history, err := log.ReadStreamsUpTo(ctx, tx, streams, upto)
	if err != nil {
		return nil, nil, fmt.Errorf("read streams: %w", err)
	}
	return history, at, nil
}
