package commands

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/clientele/clientele/eventstore"
)

// foldStream reads one aggregate's stream from its start and folds its
// events into the aggregate's current state and version: state is the
// aggregate before its first event, and apply gives the state after one
// more event. A stream without events is an aggregate that does not
// exist: missing() is its error (a domain.NotFound).
func foldStream[S any](ctx context.Context, store eventstore.Store, streamID string, state S,
	apply func(S, eventstore.RecordedEvent) (S, error), missing func() error) (S, int64, error) {
	evs, err := store.ReadStream(ctx, streamID, 0)
	if err != nil {
		return state, 0, err
	}
	var version int64
	for _, e := range evs {
		version = e.StreamVersion
		if state, err = apply(state, e); err != nil {
			return state, 0, fmt.Errorf("commands: decode %s %s/%d: %w", e.Type, e.StreamID, e.StreamVersion, err)
		}
	}
	if version == 0 {
		return state, 0, missing()
	}
	return state, version, nil
}

// decodeEvent reads a recorded event's data as an event of type E.
func decodeEvent[E any](e eventstore.RecordedEvent) (E, error) {
	var ev E
	err := json.Unmarshal(e.Data, &ev)
	return ev, err
}
