package storetest

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/clientele/clientele/eventstore"
)

func testAppendAndReadBack(t *testing.T, s eventstore.Store) {
	c := eventstore.Commit{Metadata: meta(), Streams: []eventstore.StreamAppend{
		{StreamID: "customer-c1-a", ExpectedVersion: eventstore.NoStream, Events: events("CustomerCreated", 3)},
		{StreamID: "customer-c1-b", ExpectedVersion: eventstore.NoStream, Events: events("CustomerImported", 2)},
	}}
	before := time.Now().Truncate(time.Microsecond)
	got := mustAppend(t, s, c)
	after := time.Now()

	var want []eventstore.RecordedEvent
	for _, st := range c.Streams {
		for i, e := range st.Events {
			want = append(want, eventstore.RecordedEvent{
				StreamID: st.StreamID, StreamVersion: int64(i + 1),
				Type: e.Type, Data: e.Data, Metadata: meta(),
			})
		}
	}
	ignoreStamps := cmpopts.IgnoreFields(eventstore.RecordedEvent{}, "RecordedAt", "Position")
	if diff := cmp.Diff(want, got.Events, cmpOpts, ignoreStamps); diff != "" {
		t.Fatalf("Committed.Events mismatch (-want +got):\n%s", diff)
	}
	if got.TxID == 0 {
		t.Error("Committed.TxID is 0")
	}
	for i, e := range got.Events {
		if e.Position.TxID != got.TxID {
			t.Errorf("event %d: TxID %d, want the commit's %d", i, e.Position.TxID, got.TxID)
		}
		if i > 0 && e.Position.Global <= got.Events[i-1].Position.Global {
			t.Errorf("event %d: global position %d not above %d", i, e.Position.Global, got.Events[i-1].Position.Global)
		}
		if e.RecordedAt.Before(before) || e.RecordedAt.After(after) {
			t.Errorf("event %d: recorded at %v, want within [%v, %v]", i, e.RecordedAt, before, after)
		}
	}
	if got.First != got.Events[0].Position || got.Last != got.Events[4].Position {
		t.Errorf("First, Last = %v, %v; want %v, %v", got.First, got.Last, got.Events[0].Position, got.Events[4].Position)
	}

	// What is read back is exactly what Append reported.
	if diff := cmp.Diff(got.Events[:3], readStream(t, s, "customer-c1-a", 0), cmpOpts); diff != "" {
		t.Errorf("ReadStream(a) mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(got.Events[3:], readStream(t, s, "customer-c1-b", 0), cmpOpts); diff != "" {
		t.Errorf("ReadStream(b) mismatch (-want +got):\n%s", diff)
	}
	waitVisible(t, s, got.Last)
	if diff := cmp.Diff(got.Events, readLog(t, s, eventstore.Position{}, 100), cmpOpts); diff != "" {
		t.Errorf("ReadLog mismatch (-want +got):\n%s", diff)
	}

	// A later commit continues the stream and comes later in the log.
	next := mustAppend(t, s, commit("customer-c1-a", 3, events("CustomerRenamed", 2)...))
	if diff := cmp.Diff([]int64{4, 5}, versions(next.Events)); diff != "" {
		t.Errorf("versions of the second commit (-want +got):\n%s", diff)
	}
	if !got.Last.Less(next.First) || next.TxID == got.TxID {
		t.Errorf("second commit at %v (tx %d), want after %v (tx %d)", next.First, next.TxID, got.Last, got.TxID)
	}
	if diff := cmp.Diff(seq(1, 5), versions(readStream(t, s, "customer-c1-a", 0))); diff != "" {
		t.Errorf("versions of stream a (-want +got):\n%s", diff)
	}
}
