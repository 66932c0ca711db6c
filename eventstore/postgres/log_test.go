package postgres_test

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"

	"github.com/clientele/clientele/eventstore"
	"github.com/clientele/clientele/eventstore/postgres"
	"github.com/clientele/clientele/internal/pg/pgtest"
)

// TestLog: the log's reads for projections, on a small log of two
// companies, through the pool and through a transaction.
func TestLog(t *testing.T) {
	ctx := t.Context()
	s := postgres.New(pgtest.NewPool(t))
	commit := func(company, stream, typ string, data ...string) eventstore.Committed {
		t.Helper()
		evs := make([]eventstore.Event, len(data))
		for i, d := range data {
			evs[i] = eventstore.Event{Type: typ, Data: json.RawMessage(d)}
		}
		c, err := s.Append(ctx, eventstore.Commit{Metadata: eventstore.Metadata{CompanyID: company},
			Streams: []eventstore.StreamAppend{{StreamID: stream, ExpectedVersion: eventstore.Any, Events: evs}}})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	a1 := commit("a", "s-1", "Happened", `{"n": 1}`, `{"n": 2}`)
	b1 := commit("b", "s-2", "EventRecorded", `{"id": 7}`)
	a2 := commit("a", "s-1", "Other", `{"n": 3}`)
	a3 := commit("a", "s-3", "EventRecorded", `{"id": 7}`, `{"id": 8}`)
	positions := func(evs []eventstore.RecordedEvent) []eventstore.Position {
		out := []eventstore.Position{}
		for _, e := range evs {
			out = append(out, e.Position)
		}
		return out
	}
	of := func(cs ...eventstore.Committed) []eventstore.Position {
		out := []eventstore.Position{}
		for _, c := range cs {
			out = append(out, positions(c.Events)...)
		}
		return out
	}
	log := postgres.NewLog(s.Pool())

	for _, c := range []struct {
		name        string
		after, upTo eventstore.Position
		atMost      int64
		want        int64
	}{
		{"whole log", eventstore.Position{}, a3.Last, 0, 6},
		{"after a commit", a1.Last, a2.Last, 0, 2},
		{"empty range", a2.Last, a1.Last, 0, 0},
		{"whole log, at most 4", eventstore.Position{}, a3.Last, 4, 4},
		{"whole log, at most 7", eventstore.Position{}, a3.Last, 7, 6},
	} {
		if n, err := log.CountEvents(ctx, c.after, c.upTo, c.atMost); err != nil || n != c.want {
			t.Errorf("CountEvents %s = %d, %v; want %d", c.name, n, err, c.want)
		}
	}

	if next, ok, err := log.NextCommit(ctx, a1.Last, a3.TxID); err != nil || !ok || next != b1.TxID {
		t.Errorf("NextCommit after a1 = %d, %v, %v; want %d", next, ok, err, b1.TxID)
	}
	if _, ok, err := log.NextCommit(ctx, a3.Last, a3.TxID); err != nil || ok {
		t.Errorf("NextCommit after the end = %v, %v; want none", ok, err)
	}

	for _, c := range []struct {
		name string
		tx   uint64
		typ  string
		want bool
	}{
		{"holds", a2.TxID, "Other", true},
		{"does not", a1.TxID, "Other", false},
	} {
		if has, err := log.CommitHasType(ctx, c.tx, c.typ); err != nil || has != c.want {
			t.Errorf("CommitHasType %s = %v, %v; want %v", c.name, has, err, c.want)
		}
	}

	evs, err := log.ReadCompanyTypes(ctx, "a", []string{"Happened", "EventRecorded"}, eventstore.Position{}, a3.Last, 2)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(of(a1), positions(evs)); diff != "" {
		t.Errorf("ReadCompanyTypes, a page of 2 (-want +got):\n%s", diff)
	}
	evs, err = log.ReadCompanyTypes(ctx, "a", []string{"Happened", "EventRecorded"}, a1.First, a3.Last, 10)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(append(of(a1)[1:], a3.Events[0].Position), positions(evs)); diff != "" {
		t.Errorf("ReadCompanyTypes, strictly between (-want +got):\n%s", diff)
	}

	evs, err = log.ReadStreamsUpTo(ctx, []string{"s-3", "s-1", "nothing"}, []int64{1, 2, 5})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(append(of(a1), a3.Events[0].Position), positions(evs)); diff != "" {
		t.Errorf("ReadStreamsUpTo (-want +got):\n%s", diff)
	}

	got := map[string][]string{}
	err = log.EachEventRecorded(ctx, []string{"a", "a", "b", "b"}, []int64{8, 9, 7, 8}, func(company string, data []byte) error {
		got[company] = append(got[company], string(data))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string][]string{"a": {`{"id": 8}`}, "b": {`{"id": 7}`}}, got); diff != "" {
		t.Errorf("EachEventRecorded (-want +got):\n%s", diff)
	}

	err = pgx.BeginFunc(ctx, s.Pool(), func(tx pgx.Tx) error {
		log := postgres.NewLog(tx)
		if err := log.LockAppends(ctx); err != nil {
			return err
		}
		evs, err := log.ReadAfter(ctx, b1.Last)
		if diff := cmp.Diff(of(a2, a3), positions(evs)); err == nil && diff != "" {
			t.Errorf("ReadAfter (-want +got):\n%s", diff)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}
