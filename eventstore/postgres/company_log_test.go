package postgres_test

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/clientele/clientele/eventstore"
	"github.com/clientele/clientele/eventstore/postgres"
	"github.com/clientele/clientele/internal/pg/pgtest"
)

// TestEachCompanyEventAcrossFetches reads a company's log longer than
// several FETCHes of the cursor, between another company's commits, and
// checks it against ReadCompanyLog's pages: the same events, in order,
// none twice; a read stopped early leaves the pool as it was.
func TestEachCompanyEventAcrossFetches(t *testing.T) {
	s := postgres.New(pgtest.NewPool(t))
	ctx := t.Context()
	for i := range 6 {
		for _, company := range []string{"a", "b"} {
			evs := make([]eventstore.Event, 700)
			for j := range evs {
				evs[j] = eventstore.Event{Type: "Happened", Data: json.RawMessage(fmt.Sprintf(`{"n": %d}`, j))}
			}
			if _, err := s.Append(ctx, eventstore.Commit{Metadata: eventstore.Metadata{CompanyID: company, RunID: fmt.Sprint(i)},
				Streams: []eventstore.StreamAppend{{StreamID: fmt.Sprintf("fetch-%s-%d", company, i), ExpectedVersion: eventstore.NoStream, Events: evs}}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	head, err := s.Head(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var want []eventstore.RecordedEvent
	for pos := (eventstore.Position{}); ; {
		page, err := s.ReadCompanyLog(ctx, "a", pos, head, 1000)
		if err != nil {
			t.Fatal(err)
		}
		if len(page) == 0 {
			break
		}
		want = append(want, page...)
		pos = page[len(page)-1].Position
	}
	if len(want) != 4200 {
		t.Fatalf("ReadCompanyLog gave %d events, want 4200", len(want))
	}
	var got []eventstore.RecordedEvent
	if err := s.EachCompanyEvent(ctx, "a", eventstore.Position{}, head, func(e eventstore.RecordedEvent) error {
		got = append(got, e)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got, jsonData); diff != "" {
		t.Errorf("EachCompanyEvent mismatch with ReadCompanyLog (-want +got):\n%s", diff)
	}

	stop := fmt.Errorf("enough")
	n := 0
	if err := s.EachCompanyEvent(ctx, "a", eventstore.Position{}, head, func(eventstore.RecordedEvent) error {
		if n++; n == 10 {
			return stop
		}
		return nil
	}); err != stop { //nolint:errorlint // fn's error, as it is
		t.Fatalf("EachCompanyEvent stopped = %v, want fn's error", err)
	}
	if st := s.Pool().Stat(); st.AcquiredConns() != 0 {
		t.Errorf("%d connections still acquired after a read stopped early", st.AcquiredConns())
	}
}

// TestEachCompanyEventHoldsNoReaderBack appends while a read of the
// company's log is under way (its cursor's transaction open): the new
// commit reaches the log's readers (Head) at once, for the read takes
// no transaction id (pg_snapshot_xmin is not held back by it).
func TestEachCompanyEventHoldsNoReaderBack(t *testing.T) {
	s := postgres.New(pgtest.NewPool(t))
	ctx := t.Context()
	first := mustAppend(t, s, "held-c1-1")
	err := s.EachCompanyEvent(ctx, "c1", eventstore.Position{}, first.Last, func(e eventstore.RecordedEvent) error {
		if e.Position != first.First {
			return nil
		}
		c := mustAppend(t, s, "held-c1-2")
		deadline := time.Now().Add(30 * time.Second) // another session of the shared server may hold it
		for {
			head, err := s.Head(ctx)
			if err != nil {
				return err
			}
			if head == c.Last {
				return nil
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("head %v, want %v: the read holds the log's readers back", head, c.Last)
			}
			time.Sleep(10 * time.Millisecond)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
}
