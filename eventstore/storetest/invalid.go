package storetest

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/clientele/clientele/eventstore"
)

func testInvalidCommit(t *testing.T, s eventstore.Store) {
	ok := events("Valid", 1)
	tests := []struct {
		name   string
		commit eventstore.Commit
	}{
		{"no company", eventstore.Commit{Streams: commit("s-c1-1", eventstore.Any, ok...).Streams}},
		{"no streams", eventstore.Commit{Metadata: meta()}},
		{"empty stream id", commit("", eventstore.Any, ok...)},
		{"no events", commit("s-c1-1", eventstore.Any)},
		{"bad expected version", commit("s-c1-1", -3, ok...)},
		{"event without type", commit("s-c1-1", eventstore.Any, eventstore.Event{Data: json.RawMessage(`{}`)})},
		{"data not JSON", commit("s-c1-1", eventstore.Any, eventstore.Event{Type: "T", Data: json.RawMessage(`{"a":`)})},
		{"no data", commit("s-c1-1", eventstore.Any, eventstore.Event{Type: "T"})},
		{"stream twice", eventstore.Commit{Metadata: meta(), Streams: []eventstore.StreamAppend{
			{StreamID: "s-c1-1", ExpectedVersion: eventstore.Any, Events: ok},
			{StreamID: "s-c1-1", ExpectedVersion: eventstore.Any, Events: ok},
		}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := s.Append(t.Context(), tt.commit)
			if !errors.Is(err, eventstore.ErrInvalidCommit) {
				t.Fatalf("Append = %v, want ErrInvalidCommit", err)
			}
		})
	}
	if head, err := s.Head(t.Context()); err != nil || !head.IsZero() {
		t.Errorf("Head = %v, %v after invalid commits, want the zero position", head, err)
	}
	if got := readStream(t, s, "s-c1-1", 0); len(got) != 0 {
		t.Errorf("invalid commits wrote %d events", len(got))
	}
}
