package storetest

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/clientele/clientele/eventstore"
)

func testReadStreamAfterVersion(t *testing.T, s eventstore.Store) {
	mustAppend(t, s, commit("customer-c1-r", eventstore.NoStream, events("Created", 3)...))
	mustAppend(t, s, commit("customer-c1-other", eventstore.NoStream, events("Created", 2)...))
	mustAppend(t, s, commit("customer-c1-r", 3, events("Changed", 2)...))
	tests := []struct {
		name   string
		stream string
		after  int64
		want   []int64
	}{
		{"from the start", "customer-c1-r", 0, seq(1, 5)},
		{"from the middle", "customer-c1-r", 3, seq(4, 5)},
		{"at the end", "customer-c1-r", 5, nil},
		{"past the end", "customer-c1-r", 9, nil},
		{"unknown stream", "customer-c1-none", 0, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := readStream(t, s, tt.stream, tt.after)
			if diff := cmp.Diff(tt.want, versions(got), cmpOpts); diff != "" {
				t.Errorf("versions (-want +got):\n%s", diff)
			}
			for _, e := range got {
				if e.StreamID != tt.stream {
					t.Errorf("event of stream %q in ReadStream(%q)", e.StreamID, tt.stream)
				}
			}
		})
	}
}

// appendCommits writes commits of the given sizes, some spanning two
// streams, and returns them in order.
func appendCommits(t *testing.T, s eventstore.Store, sizes ...int) []eventstore.Committed {
	t.Helper()
	var out []eventstore.Committed
	for i, n := range sizes {
		c := commit(fmt.Sprintf("log-c1-%d", i), eventstore.NoStream, events("Logged", n)...)
		if n > 2 {
			c = commit(fmt.Sprintf("log-c1-%d", i), eventstore.NoStream, events("Logged", n-1)...)
			c.Streams = append(c.Streams, eventstore.StreamAppend{StreamID: fmt.Sprintf("log-c1-%d-b", i), Events: events("Logged", 1)})
		}
		out = append(out, mustAppend(t, s, c))
	}
	waitVisible(t, s, out[len(out)-1].Last)
	return out
}

func testReadLog(t *testing.T, s eventstore.Store) {
	commits := appendCommits(t, s, 1, 3, 2, 5, 1, 4, 2)
	var all []eventstore.RecordedEvent
	for i, c := range commits {
		if i > 0 && !commits[i-1].Last.Less(c.First) {
			t.Fatalf("commit %d starts at %v, not after %v", i, c.First, commits[i-1].Last)
		}
		all = append(all, c.Events...)
	}

	t.Run("from a checkpoint", func(t *testing.T) {
		for i := range commits {
			after := eventstore.Position{}
			if i > 0 {
				after = commits[i-1].Last
			}
			var want []eventstore.RecordedEvent
			for _, c := range commits[i:] {
				want = append(want, c.Events...)
			}
			got, err := s.ReadLog(t.Context(), after, 1000)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got, cmpOpts); diff != "" {
				t.Errorf("ReadLog(%v) mismatch (-want +got):\n%s", after, diff)
			}
		}
	})

	for _, limit := range []int{1, 2, 3, 4, 7, 100} {
		t.Run(fmt.Sprintf("pages of %d", limit), func(t *testing.T) {
			var got []eventstore.RecordedEvent
			after := eventstore.Position{}
			for range len(all) + 1 {
				page, err := s.ReadLog(t.Context(), after, limit)
				if err != nil {
					t.Fatal(err)
				}
				if len(page) == 0 {
					break
				}
				// A page ends with a whole commit: the next event, if
				// any, belongs to another transaction.
				if rest := len(got) + len(page); rest < len(all) && all[rest].Position.TxID == page[len(page)-1].Position.TxID {
					t.Errorf("page after %v ends inside commit %d", after, page[len(page)-1].Position.TxID)
				}
				got = append(got, page...)
				after = page[len(page)-1].Position
			}
			if diff := cmp.Diff(all, got, cmpOpts); diff != "" {
				t.Errorf("paged log mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func testHead(t *testing.T, s eventstore.Store) {
	head, err := s.Head(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if !head.IsZero() {
		t.Errorf("Head of an empty store = %v, want the zero position", head)
	}
	commits := appendCommits(t, s, 2, 3)
	if head, err = s.Head(t.Context()); err != nil {
		t.Fatal(err)
	}
	if want := commits[1].Last; head != want {
		t.Errorf("Head = %v, want %v", head, want)
	}
	if got := readLog(t, s, head, 10); len(got) != 0 {
		t.Errorf("ReadLog after Head returned %d events, want none", len(got))
	}
}
