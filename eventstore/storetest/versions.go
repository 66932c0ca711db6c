package storetest

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/clientele/clientele/eventstore"
)

func testExpectedVersion(t *testing.T, s eventstore.Store) {
	tests := []struct {
		name     string
		existing int // events in the stream before the append
		expected int64
		conflict bool
	}{
		{"NoStream on a new stream", 0, eventstore.NoStream, false},
		{"NoStream on an existing stream", 2, eventstore.NoStream, true},
		{"Any on a new stream", 0, eventstore.Any, false},
		{"Any on an existing stream", 2, eventstore.Any, false},
		{"StreamExists on a new stream", 0, eventstore.StreamExists, true},
		{"StreamExists on an existing stream", 2, eventstore.StreamExists, false},
		{"exact version equal", 2, 2, false},
		{"exact version behind", 2, 1, true},
		{"exact version ahead", 2, 3, true},
		{"exact version on a new stream", 0, 1, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id := "case-c1-" + tt.name
			if tt.existing > 0 {
				mustAppend(t, s, commit(id, eventstore.NoStream, events("Seeded", tt.existing)...))
			}
			got, err := s.Append(t.Context(), commit(id, tt.expected, events("Appended", 2)...))
			if tt.conflict {
				wantConflict(t, err, &eventstore.ConflictError{StreamID: id, Expected: tt.expected, Actual: int64(tt.existing)})
				if diff := cmp.Diff(seq(1, int64(tt.existing)), versions(readStream(t, s, id, 0))); diff != "" {
					t.Errorf("stream changed by a refused append (-want +got):\n%s", diff)
				}
				return
			}
			if err != nil {
				t.Fatalf("Append: %v", err)
			}
			n := int64(tt.existing)
			if diff := cmp.Diff(seq(n+1, n+2), versions(got.Events)); diff != "" {
				t.Errorf("appended versions (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(seq(1, n+2), versions(readStream(t, s, id, 0))); diff != "" {
				t.Errorf("stream versions (-want +got):\n%s", diff)
			}
		})
	}
}
