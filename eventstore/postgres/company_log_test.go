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
	var last eventstore.Committed
	for i := range 6 {
		for _, company := range []string{"a", "b"} {
			evs := make([]eventstore.Event, 700)
			for j := range evs {
				evs[j] = eventstore.Event{Type: "Happened", Data: json.RawMessage(fmt.Sprintf(`{"n": %d}`, j))}
			}
			var err error
			if last, err = s.Append(ctx, eventstore.Commit{Metadata: eventstore.Metadata{CompanyID: company, RunID: fmt.Sprint(i)},
				Streams: []eventstore.StreamAppend{{StreamID: fmt.Sprintf("fetch-%s-%d", company, i), ExpectedVersion: eventstore.NoStream, Events: evs}}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	// The head passes a commit once no transaction older than it is open
	// on the server (another test's, say): wait for the last.
	head := waitHead(t, s, last.Last)
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
// commit reaches the log's readers (Head) while the read is still under
// way, for the read takes no transaction id (pg_snapshot_xmin is not
// held back by it).
func TestEachCompanyEventHoldsNoReaderBack(t *testing.T) {
	s := postgres.New(pgtest.NewPool(t))
	ctx := t.Context()
	// The head at the first commit's last event; the second commit is
	// appended while the read hands out that event.
	first := waitHead(t, s, mustAppend(t, s, "held-c1-1").Last)
	err := s.EachCompanyEvent(ctx, "c1", eventstore.Position{}, first, func(e eventstore.RecordedEvent) error {
		if e.Position != first {
			return nil
		}
		c := mustAppend(t, s, "held-c1-2")
		waitHead(t, s, c.Last)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// waitHead waits until the log's head is at least pos (30 s at most:
// another session of the shared server may hold it back), and returns it.
func waitHead(t *testing.T, s *postgres.Store, pos eventstore.Position) eventstore.Position {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		head, err := s.Head(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if !head.Less(pos) {
			return head
		}
		if time.Now().After(deadline) {
			t.Fatalf("head %v after 30 s, want at least %v", head, pos)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
