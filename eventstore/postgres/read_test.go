package postgres_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/clientele/clientele/eventstore"
	"github.com/clientele/clientele/eventstore/postgres"
	"github.com/clientele/clientele/internal/pg/pgtest"
)

// TestReadCompanyLog: one company's commits between two positions, whole
// and in log order, the other companies' left out; a full page finishes
// its last commit, and the bound is never passed.
func TestReadCompanyLog(t *testing.T) {
	ctx := t.Context()
	s := postgres.New(pgtest.NewPool(t))
	commit := func(company, stream string, n int) eventstore.Committed {
		t.Helper()
		evs := make([]eventstore.Event, n)
		for i := range evs {
			evs[i] = eventstore.Event{Type: "Happened", Data: json.RawMessage(`{}`)}
		}
		c, err := s.Append(ctx, eventstore.Commit{Metadata: eventstore.Metadata{CompanyID: company},
			Streams: []eventstore.StreamAppend{{StreamID: stream, ExpectedVersion: eventstore.Any, Events: evs}}})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	a1 := commit("a", "s-a-1", 2)
	b1 := commit("b", "s-b-1", 1)
	a2 := commit("a", "s-a-2", 3)
	b2 := commit("b", "s-b-2", 2)
	a3 := commit("a", "s-a-3", 1)
	// The log is read below the oldest transaction of the whole server,
	// which other tests may hold open for a while.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		head, err := s.Head(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !head.Less(a3.Last) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the appended commits never became visible")
		}
	}
	events := func(cs ...eventstore.Committed) []eventstore.Position {
		var out []eventstore.Position
		for _, c := range cs {
			for _, e := range c.Events {
				out = append(out, e.Position)
			}
		}
		return out
	}
	before := func(c eventstore.Committed) eventstore.Position {
		return eventstore.Position{TxID: c.First.TxID, Global: c.First.Global - 1}
	}
	for _, tc := range []struct {
		name        string
		company     string
		after, upTo eventstore.Position
		limit       int
		want        []eventstore.Position
	}{
		{"the whole range", "a", eventstore.Position{}, a3.Last, 0, events(a1, a2, a3)},
		{"another company", "b", eventstore.Position{}, a3.Last, 0, events(b1, b2)},
		{"from a commit on", "a", before(a2), a3.Last, 0, events(a2, a3)},
		{"up to a commit", "a", a1.Last, a2.Last, 0, events(a2)},
		{"up to before a commit", "a", a1.Last, b2.Last, 0, events(a2)},
		{"a page finishes its commit", "a", eventstore.Position{}, a3.Last, 3, events(a1, a2)},
		{"a page of one event", "a", a1.Last, a3.Last, 1, events(a2)},
		{"nothing after", "a", a3.Last, a3.Last, 0, nil},
		{"an empty range", "b", b2.Last, a3.Last, 0, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			evs, err := s.ReadCompanyLog(ctx, tc.company, tc.after, tc.upTo, tc.limit)
			if err != nil {
				t.Fatal(err)
			}
			var got []eventstore.Position
			for _, e := range evs {
				got = append(got, e.Position)
				if e.Metadata.CompanyID != tc.company {
					t.Errorf("event %v of company %q", e.Position, e.Metadata.CompanyID)
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("positions (-want +got):\n%s", diff)
			}
		})
	}
}
