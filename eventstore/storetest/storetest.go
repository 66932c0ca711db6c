// Package storetest is the contract suite of the event store port: every
// adapter of eventstore.Store must pass Run. Adapters on real
// infrastructure run it against a fresh, empty store per subtest group.
package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/clientele/clientele/eventstore"
)

// Run runs the contract suite. newStore returns a new, empty store; it is
// called once per top-level subtest and owns any cleanup through t.
func Run(t *testing.T, newStore func(t *testing.T) eventstore.Store) {
	t.Helper()
	tests := []struct {
		name string
		run  func(t *testing.T, s eventstore.Store)
	}{
		{"AppendAndReadBack", testAppendAndReadBack},
		{"ExpectedVersion", testExpectedVersion},
		{"AtomicMultiStream", testAtomicMultiStream},
		{"ReadStreamAfterVersion", testReadStreamAfterVersion},
		{"ReadLog", testReadLog},
		{"Head", testHead},
		{"ReadCommit", testReadCommit},
		{"ReadCompanyLog", testReadCompanyLog},
		{"EachCompanyEvent", testEachCompanyEvent},
		{"InvalidCommit", testInvalidCommit},
		{"ConcurrentExpectedVersion", testConcurrentExpectedVersion},
		{"ConcurrentAny", testConcurrentAny},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { tt.run(t, newStore(t)) })
	}
}

// visibleWithin bounds the wait for a commit to reach ReadLog. An adapter
// may hold back committed events while an older transaction is still open
// (PostgreSQL's snapshot xmin is server-wide, so any session on a shared
// test server can delay it); the suite waits rather than fail.
const visibleWithin = 30 * time.Second

// cmpOpts compares events as the port promises them: data and metadata as
// JSON values (an adapter may normalise the bytes), empty equal to nil.
var cmpOpts = cmp.Options{
	cmp.Comparer(jsonEqual),
	cmpopts.EquateEmpty(),
}

func jsonEqual(a, b json.RawMessage) bool {
	var va, vb any
	if json.Unmarshal(a, &va) != nil || json.Unmarshal(b, &vb) != nil {
		return string(a) == string(b)
	}
	return reflect.DeepEqual(va, vb)
}

func meta() eventstore.Metadata {
	return eventstore.Metadata{
		CompanyID:     "c1",
		RunID:         "run-7",
		Actor:         "users/42",
		Source:        "csv",
		CorrelationID: "corr-1",
		CausationID:   "cause-1",
	}
}

// events returns n events of typ whose data tells them apart.
func events(typ string, n int) []eventstore.Event {
	out := make([]eventstore.Event, n)
	for i := range out {
		out[i] = eventstore.Event{Type: typ, Data: json.RawMessage(fmt.Sprintf(`{"n":%d,"name":"Zoë \"%d\"","tags":["a","b"],"nested":{"ok":true,"v":null}}`, i+1, i+1))}
	}
	return out
}

// commit builds a commit of one stream.
func commit(streamID string, expected int64, evs ...eventstore.Event) eventstore.Commit {
	return eventstore.Commit{Metadata: meta(), Streams: []eventstore.StreamAppend{{StreamID: streamID, ExpectedVersion: expected, Events: evs}}}
}

func mustAppend(t *testing.T, s eventstore.Store, c eventstore.Commit) eventstore.Committed {
	t.Helper()
	got, err := s.Append(t.Context(), c)
	if err != nil {
		t.Fatalf("Append: %v", err)
	}
	return got
}

// wantConflict checks that err is a *ConflictError equal to want.
func wantConflict(t *testing.T, err error, want *eventstore.ConflictError) {
	t.Helper()
	var ce *eventstore.ConflictError
	if !errors.As(err, &ce) {
		t.Fatalf("got error %v, want a *eventstore.ConflictError", err)
	}
	if diff := cmp.Diff(want, ce); diff != "" {
		t.Errorf("ConflictError mismatch (-want +got):\n%s", diff)
	}
}

// waitVisible waits until Head reaches pos, so that ReadLog returns
// everything up to it.
func waitVisible(t *testing.T, s eventstore.Store, pos eventstore.Position) {
	t.Helper()
	deadline := time.Now().Add(visibleWithin)
	for {
		head, err := s.Head(t.Context())
		if err != nil {
			t.Fatalf("Head: %v", err)
		}
		if !head.Less(pos) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("Head is %v after %v, want at least %v", head, visibleWithin, pos)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// readLog reads the whole visible log in pages of limit.
func readLog(t *testing.T, s eventstore.Store, after eventstore.Position, limit int) []eventstore.RecordedEvent {
	t.Helper()
	var all []eventstore.RecordedEvent
	for {
		page, err := s.ReadLog(t.Context(), after, limit)
		if err != nil {
			t.Fatalf("ReadLog(%v, %d): %v", after, limit, err)
		}
		if len(page) == 0 {
			return all
		}
		all = append(all, page...)
		after = page[len(page)-1].Position
	}
}

func readStream(t *testing.T, s eventstore.Store, id string, after int64) []eventstore.RecordedEvent {
	t.Helper()
	evs, err := s.ReadStream(t.Context(), id, after)
	if err != nil {
		t.Fatalf("ReadStream(%q, %d): %v", id, after, err)
	}
	return evs
}

func versions(evs []eventstore.RecordedEvent) []int64 {
	var out []int64
	for _, e := range evs {
		out = append(out, e.StreamVersion)
	}
	return out
}

// seq returns from, from+1, ..., to.
func seq(from, to int64) []int64 {
	var out []int64
	for v := from; v <= to; v++ {
		out = append(out, v)
	}
	return out
}
