package storetest

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/clientele/clientele/eventstore"
)

// testAtomicMultiStream checks that one conflicting stream leaves the whole
// commit unwritten, wherever it sits in the commit (adapters may lock
// streams in another order than the commit's).
func testAtomicMultiStream(t *testing.T, s eventstore.Store) {
	tests := []struct {
		name     string
		conflict int   // index of the conflicting stream among 3
		expected int64 // its expected version; the stream is at version 1
	}{
		{"first stream exists", 0, eventstore.NoStream},
		{"middle stream behind", 1, 2},
		{"last stream exists", 2, eventstore.NoStream},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			existing := fmt.Sprintf("existing-c1-%d", i)
			seed := mustAppend(t, s, commit(existing, eventstore.NoStream, events("Seeded", 1)...))
			waitVisible(t, s, seed.Last)
			logBefore := readLog(t, s, eventstore.Position{}, 1000)

			c := eventstore.Commit{Metadata: meta()}
			for j := range 3 {
				st := eventstore.StreamAppend{StreamID: fmt.Sprintf("fresh-c1-%d-%d", i, j), ExpectedVersion: eventstore.NoStream, Events: events("Created", 2)}
				if j == tt.conflict {
					st = eventstore.StreamAppend{StreamID: existing, ExpectedVersion: tt.expected, Events: events("Changed", 2)}
				}
				c.Streams = append(c.Streams, st)
			}
			_, err := s.Append(t.Context(), c)
			wantConflict(t, err, &eventstore.ConflictError{StreamID: existing, Expected: tt.expected, Actual: 1})

			for _, st := range c.Streams {
				want := 0
				if st.StreamID == existing {
					want = 1
				}
				if got := readStream(t, s, st.StreamID, 0); len(got) != want {
					t.Errorf("stream %s has %d events after a refused commit, want %d", st.StreamID, len(got), want)
				}
			}
			head, err := s.Head(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			if head != seed.Last {
				t.Errorf("Head = %v after a refused commit, want %v", head, seed.Last)
			}
			if diff := cmp.Diff(logBefore, readLog(t, s, eventstore.Position{}, 1000), cmpOpts); diff != "" {
				t.Errorf("log changed by a refused commit (-want +got):\n%s", diff)
			}

			// The fresh streams are still free: the refused commit left no trace.
			c.Streams[tt.conflict].ExpectedVersion = 1
			got := mustAppend(t, s, c)
			if n := len(got.Events); n != 6 {
				t.Errorf("retried commit wrote %d events, want 6", n)
			}
		})
	}
}
