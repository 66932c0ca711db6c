package storetest

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/clientele/clientele/eventstore"
)

// testReadCommit: a commit read by its TxID, whole or by types, with the
// span of the whole commit either way, and none of the commits around it;
// a commit that does not exist has no events and is no error.
func testReadCommit(t *testing.T, s eventstore.Store) {
	mustAppend(t, s, commit("before-c1-1", eventstore.NoStream, events("Noted", 2)...))
	c := mustAppend(t, s, eventstore.Commit{Metadata: meta(), Streams: []eventstore.StreamAppend{
		{StreamID: "read-c1-a", ExpectedVersion: eventstore.NoStream, Events: append(events("Created", 2), events("Noted", 1)...)},
		{StreamID: "read-c1-b", ExpectedVersion: eventstore.NoStream, Events: events("Created", 1)},
	}})
	after := mustAppend(t, s, commit("after-c1-1", eventstore.NoStream, events("Noted", 2)...))
	// c.Events: Created, Created, Noted (stream a), Created (stream b).

	t.Run("whole", func(t *testing.T) {
		got, err := s.ReadCommit(t.Context(), c.TxID)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(c.Events, got, cmpOpts); diff != "" {
			t.Errorf("ReadCommit(%d) mismatch (-want +got):\n%s", c.TxID, diff)
		}
	})

	wantSpan := eventstore.CommitSpan{Count: 4, First: c.First.Global, Last: c.Last.Global}
	for _, tt := range []struct {
		name  string
		types []string
		want  []eventstore.RecordedEvent
	}{
		{"one type", []string{"Noted"}, c.Events[2:3]},
		{"one type across streams", []string{"Created"}, []eventstore.RecordedEvent{c.Events[0], c.Events[1], c.Events[3]}},
		{"every type", []string{"Noted", "Created"}, c.Events},
		{"a type it has not", []string{"Missing"}, nil},
		{"no type", nil, nil},
	} {
		t.Run("types/"+tt.name, func(t *testing.T) {
			got, span, err := s.ReadCommitTypes(t.Context(), c.TxID, tt.types)
			if err != nil {
				t.Fatal(err)
			}
			if span != wantSpan {
				t.Errorf("ReadCommitTypes(%d, %v) span %+v, want the whole commit's %+v", c.TxID, tt.types, span, wantSpan)
			}
			if diff := cmp.Diff(tt.want, got, cmpOpts); diff != "" {
				t.Errorf("ReadCommitTypes(%d, %v) mismatch (-want +got):\n%s", c.TxID, tt.types, diff)
			}
		})
	}

	for _, tx := range []uint64{0, after.TxID + 1000} {
		evs, err := s.ReadCommit(t.Context(), tx)
		if err != nil || len(evs) != 0 {
			t.Errorf("ReadCommit(%d) of no commit = %d events, %v; want none, no error", tx, len(evs), err)
		}
		evs, span, err := s.ReadCommitTypes(t.Context(), tx, []string{"Noted", "Created"})
		if err != nil || len(evs) != 0 || span != (eventstore.CommitSpan{}) {
			t.Errorf("ReadCommitTypes(%d) of no commit = %d events, %+v, %v; want none, a zero span, no error", tx, len(evs), span, err)
		}
	}
}

// companyLog is five commits of two companies, interleaved: a1 b1 a2 b2 a3.
type companyLog struct {
	a1, b1, a2, b2, a3 eventstore.Committed
}

// writeCompanyLog appends a companyLog, its streams named after prefix.
func writeCompanyLog(t *testing.T, s eventstore.Store, prefix string) companyLog {
	t.Helper()
	write := func(company string, n, seq int) eventstore.Committed {
		t.Helper()
		c := commit(fmt.Sprintf("%s-%s-%d", prefix, company, seq), eventstore.NoStream, events("Happened", n)...)
		c.Metadata.CompanyID = company
		return mustAppend(t, s, c)
	}
	var l companyLog
	l.a1 = write("a", 2, 1)
	l.b1 = write("b", 1, 1)
	l.a2 = write("a", 3, 2)
	l.b2 = write("b", 2, 2)
	l.a3 = write("a", 1, 3)
	waitVisible(t, s, l.a3.Last)
	return l
}

// companyLogRange is a read of one company's log between two positions,
// limit events a page (0: no limit), and the events it gives.
type companyLogRange struct {
	name        string
	company     string
	after, upTo eventstore.Position
	limit       int
	want        []eventstore.RecordedEvent
}

// ranges are the unpaged reads every company-log reader answers alike.
func (l companyLog) ranges() []companyLogRange {
	of := func(cs ...eventstore.Committed) []eventstore.RecordedEvent {
		var out []eventstore.RecordedEvent
		for _, c := range cs {
			out = append(out, c.Events...)
		}
		return out
	}
	before := func(c eventstore.Committed) eventstore.Position {
		return eventstore.Position{TxID: c.First.TxID, Global: c.First.Global - 1}
	}
	a1, b1, a2, b2, a3 := l.a1, l.b1, l.a2, l.b2, l.a3
	inA2 := a2.Events[1].Position // the middle of a2
	return []companyLogRange{
		{"the whole range", "a", eventstore.Position{}, a3.Last, 0, of(a1, a2, a3)},
		{"another company", "b", eventstore.Position{}, a3.Last, 0, of(b1, b2)},
		{"a company with no commit", "z", eventstore.Position{}, a3.Last, 0, nil},
		{"from a commit on", "a", before(a2), a3.Last, 0, of(a2, a3)},
		{"after is excluded", "a", a1.Last, a3.Last, 0, of(a2, a3)},
		{"from inside a commit", "a", a2.First, a3.Last, 0, slices.Concat(a2.Events[1:], a3.Events)},
		{"upTo is included", "a", a1.Last, a2.Last, 0, of(a2)},
		{"up to before a commit", "a", a1.Last, b2.Last, 0, of(a2)},
		{"up to inside a commit, which is cut", "a", a1.Last, inA2, 0, a2.Events[:2]},
		{"nothing after", "a", a3.Last, a3.Last, 0, nil},
		{"an empty range", "b", b2.Last, a3.Last, 0, nil},
		{"a range backwards", "a", a3.Last, a1.Last, 0, nil},
	}
}

// testReadCompanyLog: one company's commits between two positions, in log
// order, the other companies' left out; a full page finishes its last
// commit, and upTo is never passed.
func testReadCompanyLog(t *testing.T, s eventstore.Store) {
	l := writeCompanyLog(t, s, "s")
	a1, b1, a2, a3 := l.a1, l.b1, l.a2, l.a3
	inA2 := a2.Events[1].Position
	pages := []companyLogRange{
		{"a page finishes its commit", "a", eventstore.Position{}, a3.Last, 3, slices.Concat(a1.Events, a2.Events)},
		{"a page of one event", "a", a1.Last, a3.Last, 1, a2.Events},
		{"a page of one event skips other companies", "b", b1.Last, a3.Last, 1, l.b2.Events},
		{"a page finishes its commit up to upTo only", "a", a1.Last, inA2, 1, a2.Events[:2]},
	}
	for _, tt := range append(l.ranges(), pages...) {
		t.Run(tt.name, func(t *testing.T) {
			got, err := s.ReadCompanyLog(t.Context(), tt.company, tt.after, tt.upTo, tt.limit)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got, cmpOpts); diff != "" {
				t.Errorf("ReadCompanyLog(%q, %v, %v, %d) mismatch (-want +got):\n%s", tt.company, tt.after, tt.upTo, tt.limit, diff)
			}
		})
	}
}

// testEachCompanyEvent: the same ranges as ReadCompanyLog's, all of each,
// handed out one event at a time; the events handed out may be kept;
// an error of fn stops the read at once and comes back as it is.
func testEachCompanyEvent(t *testing.T, s eventstore.Store) {
	l := writeCompanyLog(t, s, "e")
	for _, tt := range l.ranges() {
		t.Run(tt.name, func(t *testing.T) {
			var got []eventstore.RecordedEvent
			err := s.EachCompanyEvent(t.Context(), tt.company, tt.after, tt.upTo, func(e eventstore.RecordedEvent) error {
				got = append(got, e) // kept: the store must not reuse it
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got, cmpOpts); diff != "" {
				t.Errorf("EachCompanyEvent(%q, %v, %v) mismatch (-want +got):\n%s", tt.company, tt.after, tt.upTo, diff)
			}
		})
	}

	t.Run("an error of fn stops the read", func(t *testing.T) {
		stop := errors.New("enough")
		var got []eventstore.RecordedEvent
		err := s.EachCompanyEvent(t.Context(), "a", eventstore.Position{}, l.a3.Last, func(e eventstore.RecordedEvent) error {
			got = append(got, e)
			if len(got) == 3 {
				return stop
			}
			return nil
		})
		if err != stop { //nolint:errorlint // fn's error, as it is, not wrapped
			t.Errorf("EachCompanyEvent = %v, want fn's error as it is", err)
		}
		if diff := cmp.Diff(slices.Concat(l.a1.Events, l.a2.Events)[:3], got, cmpOpts); diff != "" {
			t.Errorf("events before the stop mismatch (-want +got):\n%s", diff)
		}
	})
}
