package bus_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/clientele/clientele/eventstore"
	"github.com/clientele/clientele/eventstore/postgres"
	"github.com/clientele/clientele/internal/bus"
	"github.com/clientele/clientele/internal/pg"
	"github.com/clientele/clientele/internal/pg/pgtest"
	"github.com/clientele/clientele/projections"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// privateStore starts a PostgreSQL server of the test's own, migrated,
// and the store on it, publishing its commits.
func privateStore(t *testing.T) (*pgtest.Server, *pgxpool.Pool, *postgres.Store) {
	t.Helper()
	srv := pgtest.NewServer(t)
	pool, err := pg.Open(t.Context(), srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	if err := pg.Migrate(t.Context(), pool); err != nil {
		t.Fatal(err)
	}
	return srv, pool, postgres.New(pool, projections.CommitPublisher{})
}

func commit(company, stream string, n int) eventstore.Commit {
	evs := make([]eventstore.Event, n)
	for i := range evs {
		evs[i] = eventstore.Event{Type: "Ticked", Data: json.RawMessage(`{}`)}
	}
	return eventstore.Commit{
		Metadata: eventstore.Metadata{CompanyID: company},
		Streams:  []eventstore.StreamAppend{{StreamID: stream, ExpectedVersion: eventstore.Any, Events: evs}},
	}
}

// TestCommitPublisher checks that every commit, and only a commit that
// happened, is announced by exactly one message, in commit order.
func TestCommitPublisher(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	store := postgres.New(pool, projections.CommitPublisher{})

	var want []bus.CommitHeader
	for i, n := range []int{1, 3, 2} {
		c, err := store.Append(ctx, commit("acme", "tick-acme-"+string(rune('a'+i)), n))
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, projections.HeaderOf(c))
	}
	if want[1].Count != 3 || want[1].Last-want[1].First != 2 || want[1].CompanyID != "acme" {
		t.Fatalf("header %+v does not describe the commit", want[1])
	}
	// A commit that rolls back publishes nothing.
	errAbort := errors.New("abort")
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := store.AppendTx(ctx, tx, commit("acme", "tick-acme-z", 1)); err != nil {
			return err
		}
		return errAbort
	})
	if !errors.Is(err, errAbort) {
		t.Fatalf("append: %v", err)
	}
	var rows int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM watermill_commits`).Scan(&rows); err != nil {
		t.Fatal(err)
	}
	if rows != len(want) {
		t.Fatalf("%d outbox rows, want %d (one per commit)", rows, len(want))
	}

	transport, err := bus.NewPostgres(pool, bus.PostgresConfig{PollInterval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	sub, err := transport.Subscriber("test")
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	msgs, err := sub.Subscribe(ctx, bus.CommitsTopic)
	if err != nil {
		t.Fatal(err)
	}
	var got []bus.CommitHeader
	for len(got) < len(want) {
		select {
		case msg := <-msgs:
			h, err := bus.ParseCommitHeader(msg.Payload)
			if err != nil {
				t.Fatal(err)
			}
			if msg.Metadata.Get("company_id") != "acme" {
				t.Errorf("metadata %v has no company", msg.Metadata)
			}
			got = append(got, h)
			msg.Ack()
		case <-ctx.Done():
			t.Fatalf("received %d of %d messages", len(got), len(want))
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("headers (-want +got):\n%s", diff)
	}
}

func TestParseCommitHeader(t *testing.T) {
	for name, payload := range map[string]string{
		"not json":  `{`,
		"no tx":     `{"first":1,"last":1,"count":1}`,
		"no events": `{"tx_id":5,"first":1,"last":1,"count":0}`,
		"bad range": `{"tx_id":5,"first":3,"last":1,"count":1}`,
	} {
		if _, err := bus.ParseCommitHeader([]byte(payload)); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestPostgresConfigValidate(t *testing.T) {
	err := bus.PostgresConfig{PollInterval: -1, BatchSize: -1}.Validate()
	if err == nil {
		t.Fatal("no error")
	}
	if n := len(err.(interface{ Unwrap() []error }).Unwrap()); n != 2 {
		t.Errorf("%d errors reported, want 2: %v", n, err)
	}
}

// TestHeaderTypes: a header lists its commit's event types, so that a
// consumer of a few types skips a commit of none of them unread; a header
// without types (written before they existed) may hold any.
func TestHeaderTypes(t *testing.T) {
	c := eventstore.Committed{TxID: 7, Events: []eventstore.RecordedEvent{{Type: "B"}, {Type: "A"}, {Type: "B"}}}
	h := projections.HeaderOf(c)
	if diff := cmp.Diff([]string{"A", "B"}, h.Types); diff != "" {
		t.Errorf("types (-want +got):\n%s", diff)
	}
	if !h.HasAnyType([]string{"Z", "B"}) || h.HasAnyType([]string{"Z"}) {
		t.Errorf("HasAnyType on %v", h.Types)
	}
	old, err := bus.ParseCommitHeader([]byte(`{"tx_id":7,"first":1,"last":3,"count":3}`))
	if err != nil || !old.HasAnyType([]string{"Z"}) {
		t.Errorf("a header without types: %+v, %v; want it to hold any", old, err)
	}
}
