package projections_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/clientele/clientele/eventstore"
	"github.com/clientele/clientele/eventstore/esdb"
	"github.com/clientele/clientele/eventstore/esdb/esdbtest"
	"github.com/clientele/clientele/eventstore/postgres"
	"github.com/clientele/clientele/internal/crypto"
	"github.com/clientele/clientele/internal/pg/pgtest"
	"github.com/clientele/clientele/projections"
	"github.com/clientele/clientele/projections/datasync"
)

// esdbStandIn is the in-process EventStoreDB stand-in, started on first use.
var esdbStandIn = sync.OnceValues(esdbtest.Start)

// openESDB opens an EventStoreDB store on fresh streams of the stand-in.
func openESDB(t *testing.T) *esdb.Store {
	t.Helper()
	srv, err := esdbStandIn()
	if err != nil {
		t.Fatal(err)
	}
	s, err := esdb.Open(t.Context(), srv.URL(), esdb.Options{Prefix: "test-" + uuid.NewString()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// logCommits are the commits both logs of TestEventLogs hold: two
// companies, streams of several commits, a commit of three streams whose
// new streams are not in id order, EventRecorded events (one id a float,
// as jsonb compares numbers by value) and a commit large enough for the
// EventStoreDB adapter to write its events to parts.
func logCommits() []eventstore.Commit {
	ev := func(typ, data string) eventstore.Event {
		return eventstore.Event{Type: typ, Data: json.RawMessage(data)}
	}
	recorded := func(id string) eventstore.Event {
		return ev("EventRecorded", `{"id": `+id+`, "customer_id": "k`+id+`", "type": "visit"}`)
	}
	app := func(stream string, expected int64, evs ...eventstore.Event) eventstore.StreamAppend {
		return eventstore.StreamAppend{StreamID: stream, ExpectedVersion: expected, Events: evs}
	}
	commit := func(company string, streams ...eventstore.StreamAppend) eventstore.Commit {
		return eventstore.Commit{Metadata: eventstore.Metadata{CompanyID: company, Actor: "users/1", Source: "test"}, Streams: streams}
	}
	pad := `{"pad": "` + strings.Repeat("x", 20<<10) + `"}`
	return []eventstore.Commit{
		commit("c1", app("customer-a", eventstore.NoStream, ev("CustomerCreated", `{"n": 1}`), ev("CustomerUpdated", `{"n": 2}`))),
		commit("c2", app("activity-c2-7", eventstore.NoStream, recorded("7")), app("product-p", eventstore.NoStream, ev("ProductCreated", `{}`))),
		commit("c1",
			app("zz-customer-b", eventstore.NoStream, ev("CustomerCreated", `{"n": 3}`)),
			app("activity-c1-7", eventstore.NoStream, recorded("7"), ev("EventDeleted", `{"id": 7}`)),
			app("customer-a", 2, ev("CustomerUpdated", `{"n": 4}`))),
		commit("c1", app("activity-c1-9", eventstore.NoStream, recorded("9.0"))),
		commit("c2", app("customer-c", eventstore.NoStream, ev("CustomerCreated", `{"n": 5}`)), app("product-p", 1, ev("ProductUpdated", `{}`))),
		commit("c1", app("blob", eventstore.NoStream, ev("Padded", pad), ev("Padded", pad), ev("Padded", pad), ev("Padded", pad)),
			app("activity-c1-10", eventstore.NoStream, recorded("10"), ev("Padded", pad))),
		commit("c1", app("customer-a", 3, ev("CustomerUpdated", `{"n": 6}`))),
	}
}

// at is a position in store-independent terms: the commit's place in the
// log (1 for the first) and the event's in the commit; zero is the start.
type at struct{ Commit, Event int }

// logEvent is a recorded event in store-independent terms (RecordedAt is
// each store's own).
type logEvent struct {
	Stream  string
	Version int64
	Type    string
	Data    any
	Meta    eventstore.Metadata
	At      at
}

// logUnder is one EventLog and the commits as its store recorded them.
type logUnder struct {
	log     eventstore.EventLog
	q       eventstore.Querier
	commits []eventstore.Committed
	ats     map[eventstore.Position]at
	txs     map[uint64]int // TxID -> commit place
}

func newLogUnder(t *testing.T, store eventstore.Store, log eventstore.EventLog, q eventstore.Querier) *logUnder {
	t.Helper()
	l := &logUnder{log: log, q: q, ats: map[eventstore.Position]at{{}: {}}, txs: map[uint64]int{}}
	for i, c := range logCommits() {
		done, err := store.Append(t.Context(), c)
		if err != nil {
			t.Fatal(err)
		}
		l.commits = append(l.commits, done)
		l.txs[done.TxID] = i + 1
		for k, e := range done.Events {
			l.ats[e.Position] = at{i + 1, k + 1}
		}
	}
	return l
}

// pos returns the position of a; a place past the log is past its last
// commit.
func (l *logUnder) pos(a at) eventstore.Position {
	if a.Commit == 0 {
		return eventstore.Position{}
	}
	return l.commits[a.Commit-1].Events[a.Event-1].Position
}

// tx returns the TxID of the commit at place j: 0 for none, a TxID after
// the last for a place past the log.
func (l *logUnder) tx(j int) uint64 {
	if j == 0 {
		return 0
	}
	if j > len(l.commits) {
		return l.commits[len(l.commits)-1].TxID + 1000
	}
	return l.commits[j-1].TxID
}

func (l *logUnder) events(t *testing.T, evs []eventstore.RecordedEvent) []logEvent {
	t.Helper()
	out := make([]logEvent, len(evs))
	for i, e := range evs {
		a, ok := l.ats[e.Position]
		if !ok {
			t.Fatalf("an event at %s, which no commit holds", e.Position)
		}
		var data any
		if err := json.Unmarshal(e.Data, &data); err != nil {
			t.Fatal(err)
		}
		out[i] = logEvent{e.StreamID, e.StreamVersion, e.Type, data, e.Metadata, a}
	}
	return out
}

// TestEventLogs asks postgres.EventLog and esdb.Log every question with the
// same commits in their stores, and requires the same answers.
func TestEventLogs(t *testing.T) {
	ctx := t.Context()
	pool := pgtest.NewPool(t)
	es := openESDB(t)
	logs := map[string]*logUnder{
		"postgres": newLogUnder(t, postgres.New(pool), postgres.EventLog{}, pool),
		"esdb":     newLogUnder(t, es, esdb.NewLog(es), pool),
	}
	commits := logCommits()
	// ats: the start, and the first, a middle and the last event of
	// every commit.
	ats := []at{{}}
	for i, c := range commits {
		n := c.Count()
		ats = append(ats, at{i + 1, 1})
		if n > 2 {
			ats = append(ats, at{i + 1, n / 2})
		}
		if n > 1 {
			ats = append(ats, at{i + 1, n})
		}
	}

	// same asks every log the question and requires the answers of all to
	// be those of the PostgreSQL log.
	same := func(t *testing.T, what string, ask func(l *logUnder) (any, error)) {
		t.Helper()
		want, err := ask(logs["postgres"])
		if err != nil {
			t.Fatalf("%s: postgres: %v", what, err)
		}
		got, err := ask(logs["esdb"])
		if err != nil {
			t.Fatalf("%s: esdb: %v", what, err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s: esdb answers otherwise than postgres (-postgres +esdb):\n%s", what, diff)
		}
	}

	t.Run("NextCommit", func(t *testing.T) {
		for _, pos := range ats {
			for upTo := 0; upTo <= len(commits)+1; upTo++ {
				same(t, fmt.Sprintf("NextCommit(%v, %d)", pos, upTo), func(l *logUnder) (any, error) {
					tx, ok, err := l.log.NextCommit(ctx, l.q, l.pos(pos), l.tx(upTo))
					return []any{l.txs[tx], ok}, err
				})
			}
		}
	})
	t.Run("CountEvents", func(t *testing.T) {
		for _, after := range ats {
			for _, upTo := range ats {
				for _, atMost := range []int64{0, 1, 3} {
					same(t, fmt.Sprintf("CountEvents(%v, %v, %d)", after, upTo, atMost), func(l *logUnder) (any, error) {
						return l.log.CountEvents(ctx, l.q, l.pos(after), l.pos(upTo), atMost)
					})
				}
			}
		}
	})
	t.Run("CommitHasType", func(t *testing.T) {
		for j := 0; j <= len(commits)+1; j++ {
			for _, typ := range []string{"EventRecorded", "CustomerCreated", "Padded", "Unknown"} {
				same(t, fmt.Sprintf("CommitHasType(%d, %s)", j, typ), func(l *logUnder) (any, error) {
					return l.log.CommitHasType(ctx, l.q, l.tx(j), typ)
				})
			}
		}
	})
	t.Run("ReadCompanyTypes", func(t *testing.T) {
		typeSets := [][]string{{"EventRecorded", "EventDeleted"}, {"CustomerCreated", "CustomerUpdated", "ProductUpdated", "Padded"}}
		for _, company := range []string{"c1", "c2"} {
			for _, types := range typeSets {
				for _, limit := range []int{2, 100} {
					for _, after := range ats {
						for _, before := range ats {
							same(t, fmt.Sprintf("ReadCompanyTypes(%s, %v, %v, %v, %d)", company, types, after, before, limit), func(l *logUnder) (any, error) {
								evs, err := l.log.ReadCompanyTypes(ctx, l.q, company, types, l.pos(after), l.pos(before), limit)
								return l.events(t, evs), err
							})
						}
					}
				}
			}
		}
		end := at{len(commits), commits[len(commits)-1].Count()}
		same(t, "ReadCompanyTypes of an unknown company", func(l *logUnder) (any, error) {
			evs, err := l.log.ReadCompanyTypes(ctx, l.q, "c3", typeSets[1], l.pos(at{}), l.pos(end), 100)
			return l.events(t, evs), err
		})
	})
	t.Run("ReadStreamsUpTo", func(t *testing.T) {
		cases := []struct {
			streams []string
			upto    []int64
		}{
			{nil, nil},
			{[]string{"customer-a"}, []int64{0}},
			{[]string{"customer-a"}, []int64{2}},
			{[]string{"customer-a"}, []int64{100}},
			{[]string{"nothing", "customer-a"}, []int64{5, 3}},
			// The order of first events, not of the arguments nor of ids.
			{[]string{"customer-c", "activity-c1-7", "zz-customer-b", "customer-a", "blob"}, []int64{1, 1, 1, 4, 3}},
			{[]string{"product-p", "activity-c1-10", "activity-c2-7"}, []int64{2, 2, 1}},
		}
		for _, c := range cases {
			same(t, fmt.Sprintf("ReadStreamsUpTo(%v, %v)", c.streams, c.upto), func(l *logUnder) (any, error) {
				evs, err := l.log.ReadStreamsUpTo(ctx, l.q, c.streams, c.upto)
				return l.events(t, evs), err
			})
		}
	})
	t.Run("EachEventRecorded", func(t *testing.T) {
		cases := []struct {
			companies []string
			ids       []int64
		}{
			{nil, nil},
			{[]string{"c1"}, []int64{7}},
			{[]string{"c1", "c1"}, []int64{7, 7}}, // asked twice, answered twice
			{[]string{"c2", "c1", "c1", "c1", "c2", "c3"}, []int64{7, 9, 10, 8, 9, 7}},
		}
		for _, c := range cases {
			same(t, fmt.Sprintf("EachEventRecorded(%v, %v)", c.companies, c.ids), func(l *logUnder) (any, error) {
				var got []string
				err := l.log.EachEventRecorded(ctx, l.q, c.companies, c.ids, func(company string, data []byte) error {
					var d map[string]any
					if err := json.Unmarshal(data, &d); err != nil {
						return err
					}
					got = append(got, fmt.Sprint(company, " ", d["customer_id"]))
					return nil
				})
				slices.Sort(got) // PostgreSQL's order is none
				return got, err
			})
		}
	})
	t.Run("ReadAfter", func(t *testing.T) {
		for _, after := range ats {
			same(t, fmt.Sprintf("ReadAfter(%v)", after), func(l *logUnder) (any, error) {
				tx, err := pool.Begin(ctx)
				if err != nil {
					return nil, err
				}
				defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // nothing was written
				if err := l.log.LockAppends(ctx, tx); err != nil {
					return nil, err
				}
				evs, err := l.log.ReadAfter(ctx, tx, l.pos(after))
				return l.events(t, evs), err
			})
		}
	})
}

// TestLockAppendsESDB checks the pause of appends of a log in
// EventStoreDB against what a coupled commit does: it holds
// esdb.AppendLockKey shared in its transaction until it is decided.
// LockAppends waits for such a commit to end, and one that starts while
// it is held waits for it.
func TestLockAppendsESDB(t *testing.T) {
	ctx := t.Context()
	pool := pgtest.NewPool(t)
	log := esdb.NewLog(openESDB(t))
	commit := func() (end func()) {
		t.Helper()
		tx, err := pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock_shared($1)`, esdb.AppendLockKey); err != nil {
			t.Fatal(err)
		}
		end = func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }
		t.Cleanup(end) // when the test fails before it ends it
		return end
	}
	endCommit := commit()
	pause, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer pause.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // nothing was written
	locked := make(chan error, 1)
	go func() { locked <- log.LockAppends(ctx, pause) }()
	select {
	case err := <-locked:
		t.Fatalf("LockAppends returned (%v) while a commit was under way", err)
	case <-time.After(200 * time.Millisecond):
	}
	endCommit()
	if err := <-locked; err != nil {
		t.Fatal(err)
	}
	if lockedShared(t, pool) {
		t.Fatal("a commit took the append lock while LockAppends held it")
	}
	if err := pause.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if !lockedShared(t, pool) {
		t.Fatal("a commit could not take the append lock after the pause ended")
	}
}

// lockedShared reports whether a commit can take the append lock now.
func lockedShared(t *testing.T, pool *pgxpool.Pool) bool {
	t.Helper()
	var ok bool
	err := pool.QueryRow(t.Context(), `SELECT pg_try_advisory_lock_shared($1)`, esdb.AppendLockKey).Scan(&ok)
	if err != nil {
		t.Fatal(err)
	}
	if ok {
		if _, err := pool.Exec(t.Context(), `SELECT pg_advisory_unlock_shared($1)`, esdb.AppendLockKey); err != nil {
			t.Fatal(err)
		}
	}
	return ok
}

// TestDatasyncLog checks that a runtime refuses a data sync that reads
// another log than its own, and Rebuild too.
func TestDatasyncLog(t *testing.T) {
	pool := pgtest.NewPool(t)
	es := openESDB(t)
	kr, err := crypto.NewKeyring(crypto.NewMasterKey())
	if err != nil {
		t.Fatal(err)
	}
	keys := crypto.KeyStore{Keyring: kr}
	cfg := projections.RuntimeConfig{Pool: pool, Store: es, Log: esdb.NewLog(es), Async: []projections.Projector{datasync.NewDatasync(keys, postgres.EventLog{})}}
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "another log") {
		t.Errorf("Validate of a data sync on the PostgreSQL log in a runtime on EventStoreDB: %v, want an error", err)
	}
	if err := projections.Rebuild(t.Context(), pool, es, esdb.NewLog(es), datasync.NewDatasync(keys, postgres.EventLog{}), projections.KindAsync, nil); err == nil || !strings.Contains(err.Error(), "another log") {
		t.Errorf("Rebuild of a data sync on the PostgreSQL log with the EventStoreDB log: %v, want an error", err)
	}
	cfg.Async = []projections.Projector{datasync.NewDatasync(keys, esdb.NewLog(es))}
	if err := cfg.Validate(); err != nil {
		t.Errorf("Validate of a data sync on the runtime's log: %v", err)
	}
	cfg = projections.RuntimeConfig{Pool: pool, Store: postgres.New(pool), Async: []projections.Projector{datasync.NewDatasync(keys, postgres.EventLog{})}}
	if err := cfg.Validate(); err != nil {
		t.Errorf("Validate of a data sync and a runtime on the default log: %v", err)
	}
}
