package postgres_test

import (
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/clientele/clientele/eventstore"
	"github.com/clientele/clientele/eventstore/postgres"
	"github.com/clientele/clientele/internal/pg/pgtest"
)

// TestOutOfOrderCommit interleaves two transactions, T1 and T2, so that
// they commit in another order than the one in which they took their
// positions or their transaction ids. A reader following the log must
// never skip an event and never see one twice.
func TestOutOfOrderCommit(t *testing.T) {
	tests := []struct {
		name string
		// t2First makes T2 take its transaction id before T1 appends:
		// T2 then has the lower id but the higher positions.
		t2First bool
		// visibleWhileT1Open is whether T2's events may be read while T1
		// is still open: only when T2's transaction is the older.
		visibleWhileT1Open bool
	}{
		{name: "T1 older, lower positions", t2First: false, visibleWhileT1Open: false},
		{name: "T2 older, higher positions", t2First: true, visibleWhileT1Open: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := t.Context()
			pool := pgtest.NewPool(t)
			s := postgres.New(pool)
			c0 := mustAppend(t, s, "before-c1-1")

			t2 := begin(t, s)
			if tt.t2First {
				if _, err := t2.Exec(ctx, `SELECT pg_current_xact_id()`); err != nil {
					t.Fatal(err)
				}
			}
			t1 := begin(t, s)
			c1 := appendTx(t, s, t1, "first-c1-1")
			c2 := appendTx(t, s, t2, "second-c1-1")
			if err := t2.Commit(ctx); err != nil {
				t.Fatal(err)
			}
			if c1.Last.Global >= c2.First.Global {
				t.Fatalf("T1 took positions %v..%v, not below T2's %v", c1.First, c1.Last, c2.First)
			}
			if (c2.TxID < c1.TxID) != tt.t2First {
				t.Fatalf("T1 has transaction id %d, T2 %d; want T2 older: %v", c1.TxID, c2.TxID, tt.t2First)
			}

			r := &reader{s: s, seen: make(map[eventstore.Position]int)}
			want := slices.Clone(c0.Events)
			if tt.visibleWhileT1Open {
				want = append(want, c2.Events...)
			}
			r.readUntil(t, len(want))
			if got := r.page(t); len(got) != 0 {
				t.Fatalf("while T1 is open the reader got %d more events (first %s/%d)", len(got), got[0].StreamID, got[0].StreamVersion)
			}

			if err := t1.Commit(ctx); err != nil {
				t.Fatal(err)
			}
			// The whole log, in (transaction id, global position) order.
			want = slices.Concat(c0.Events, c1.Events, c2.Events)
			if tt.t2First {
				want = slices.Concat(c0.Events, c2.Events, c1.Events)
			}
			r.readUntil(t, len(want))
			for p, n := range r.seen {
				if n != 1 {
					t.Errorf("event at %v seen %d times", p, n)
				}
			}
			if diff := cmp.Diff(want, r.all, jsonData); diff != "" {
				t.Errorf("events as the reader saw them (-want +got):\n%s", diff)
			}
			all, err := s.ReadLog(ctx, eventstore.Position{}, 1000)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, all, jsonData); diff != "" {
				t.Errorf("the whole log (-want +got):\n%s", diff)
			}
		})
	}
}

// reader follows the log as a subscriber does, resuming from the last
// position it returned.
type reader struct {
	s     *postgres.Store
	after eventstore.Position
	seen  map[eventstore.Position]int
	all   []eventstore.RecordedEvent
}

func (r *reader) page(t *testing.T) []eventstore.RecordedEvent {
	t.Helper()
	evs, err := r.s.ReadLog(t.Context(), r.after, 2)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range evs {
		r.seen[e.Position]++
		r.all = append(r.all, e)
		r.after = e.Position
	}
	return evs
}

// readUntil reads until it has seen n events. It waits because any open
// transaction on the shared test server holds readers back for a while.
func (r *reader) readUntil(t *testing.T, n int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for len(r.all) < n {
		if len(r.page(t)) == 0 {
			if time.Now().After(deadline) {
				t.Fatalf("reader saw %d events, want %d", len(r.all), n)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// TestReadLogOrdersTransactionsNumerically checks that ReadLog orders
// commits by transaction id as a number: as text, commit 100 would come
// before commit 99 (transaction ids gain a digit all the time).
func TestReadLogOrdersTransactionsNumerically(t *testing.T) {
	ctx := t.Context()
	pool := pgtest.NewPool(t)
	// Written directly, with old transaction ids (below every snapshot's
	// xmin, so visible to ReadLog), the later commit with the lower
	// position.
	if _, err := pool.Exec(ctx, `
		INSERT INTO events (global_position, transaction_id, stream_id, stream_key, stream_version, company_id, event_type, data, metadata)
		VALUES (1, '100', 's-b', 1, 1, 'co', 'T', '{}', '{}'), (2, '99', 's-a', 2, 1, 'co', 'T', '{}', '{}')`); err != nil {
		t.Fatal(err)
	}
	evs, err := postgres.New(pool).ReadLog(ctx, eventstore.Position{}, 10)
	if err != nil {
		t.Fatal(err)
	}
	var got []uint64
	for _, e := range evs {
		got = append(got, e.Position.TxID)
	}
	if diff := cmp.Diff([]uint64{99, 100}, got); diff != "" {
		t.Errorf("commits read (-want +got):\n%s", diff)
	}
}
