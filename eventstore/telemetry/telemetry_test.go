package telemetry_test

import (
	"context"
	"errors"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/clientele/clientele/eventstore"
	"github.com/clientele/clientele/eventstore/memory"
	"github.com/clientele/clientele/eventstore/telemetry"
)

func TestInstrumentStoreCountsCommitsEventsAndConflicts(t *testing.T) {
	reg := prometheus.NewRegistry()
	s, err := telemetry.InstrumentStore(memory.New(), reg)
	if err != nil {
		t.Fatal(err)
	}
	commit := func(expected int64) error {
		_, err := s.Append(context.Background(), eventstore.Commit{
			Metadata: eventstore.Metadata{CompanyID: "c1"},
			Streams: []eventstore.StreamAppend{{StreamID: "thing-c1-1", ExpectedVersion: expected, Events: []eventstore.Event{
				{Type: "A", Data: []byte(`{}`)}, {Type: "B", Data: []byte(`{}`)},
			}}},
		})
		return err
	}
	if err := commit(eventstore.NoStream); err != nil {
		t.Fatal(err)
	}
	var conflict *eventstore.ConflictError
	if err := commit(eventstore.NoStream); !errors.As(err, &conflict) {
		t.Fatalf("second append: %v, want a conflict", err)
	}
	for name, want := range map[string]float64{
		"clientele_eventstore_commits_total":   1,
		"clientele_eventstore_events_total":    2,
		"clientele_eventstore_conflicts_total": 1,
	} {
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		got := -1.0
		for _, mf := range mfs {
			if mf.GetName() == name {
				got = mf.GetMetric()[0].GetCounter().GetValue()
			}
		}
		if got != want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == "clientele_eventstore_append_seconds" {
			if n := mf.GetMetric()[0].GetHistogram().GetSampleCount(); n != 1 {
				t.Errorf("append_seconds observed %d appends, want 1", n)
			}
		}
	}
}
