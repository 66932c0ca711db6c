package esdb_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/uuid"

	"github.com/clientele/clientele/eventstore"
	"github.com/clientele/clientele/eventstore/esdb"
	"github.com/clientele/clientele/eventstore/esdb/esdbtest"
	"github.com/clientele/clientele/eventstore/storetest"
)

// standIn is the package's in-process stand-in server, started on first
// use; each store gets streams of its own (a fresh prefix).
var standIn = sync.OnceValues(esdbtest.Start)

// servers are the servers the tests run against: the stand-in, and the
// real server CLIENTELE_ESDB_URL names, if any.
func servers(t *testing.T) map[string]string {
	t.Helper()
	srv, err := standIn()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{"standin": srv.URL()}
	if url := envURL(); url != "" {
		out["server"] = url
	}
	return out
}

// open opens a store on fresh streams of url; prefix "" picks a new one.
func open(t testing.TB, url, prefix string) *esdb.Store {
	t.Helper()
	return openWith(t, url, esdb.Options{Prefix: prefix})
}

func openWith(t testing.TB, url string, opts esdb.Options) *esdb.Store {
	t.Helper()
	if opts.Prefix == "" {
		opts.Prefix = "test-" + uuid.NewString()
	}
	s, err := esdb.Open(context.Background(), url, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// envURL is the real server to test against, if any.
func envURL() string { return os.Getenv("CLIENTELE_ESDB_URL") }

func TestContract(t *testing.T) {
	for name, url := range servers(t) {
		t.Run(name, func(t *testing.T) {
			storetest.Run(t, func(t *testing.T) eventstore.Store { return open(t, url, "") })
		})
	}
}

// TestContractServer says whether the contract ran against a real server.
func TestContractServer(t *testing.T) {
	if envURL() == "" {
		t.Skip("CLIENTELE_ESDB_URL is not set: the contract ran against the stand-in only")
	}
}

func meta() eventstore.Metadata {
	return eventstore.Metadata{CompanyID: "c1", Actor: "users/1", Source: "api"}
}

func event(typ string, n, pad int) eventstore.Event {
	return eventstore.Event{Type: typ, Data: json.RawMessage(fmt.Sprintf(`{"n":%d,"pad":%q}`, n, strings.Repeat("x", pad)))}
}

// largeCommit has streams of one event each whose events, together, are
// far above what a record keeps inline.
func largeCommit(streams, pad int) eventstore.Commit {
	c := eventstore.Commit{Metadata: meta()}
	for i := range streams {
		c.Streams = append(c.Streams, eventstore.StreamAppend{
			StreamID: fmt.Sprintf("customer-c1-%04d", i), ExpectedVersion: eventstore.NoStream,
			Events: []eventstore.Event{event("CustomerImported", i, pad)},
		})
	}
	return c
}

// TestLargeCommit writes a commit of 1.2 MB, above the server's default
// maximum append size: its events go to a parts stream, and every read
// path returns them as written.
func TestLargeCommit(t *testing.T) {
	t.Parallel()
	for name, url := range servers(t) {
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			prefix := "test-" + uuid.NewString()
			s := open(t, url, prefix)
			small, err := s.Append(ctx, eventstore.Commit{Metadata: meta(), Streams: []eventstore.StreamAppend{{StreamID: "customer-c1-0007", Events: []eventstore.Event{event("CustomerCreated", 0, 0)}}}})
			if err != nil {
				t.Fatal(err)
			}
			c := largeCommit(400, 3000) // about 1.2 MB
			c.Streams[7].ExpectedVersion = 1
			c.Streams[200].Events[0].Type = "CustomerChanged" // in a middle part
			got, err := s.Append(ctx, c)
			if err != nil {
				t.Fatal(err)
			}
			if len(got.Events) != 400 || got.First.Global != small.Last.Global+1 || got.Last.Global != got.First.Global+399 {
				t.Fatalf("large commit: %d events from %v to %v", len(got.Events), got.First, got.Last)
			}
			log, err := s.ReadLog(ctx, small.Last, 10)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(got.Events, log, cmpJSON); diff != "" {
				t.Errorf("ReadLog of the large commit (-want +got):\n%s", diff)
			}
			commit, err := s.ReadCommit(ctx, got.TxID)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(got.Events, commit, cmpJSON); diff != "" {
				t.Errorf("ReadCommit of the large commit (-want +got):\n%s", diff)
			}
			changed, span, err := s.ReadCommitTypes(ctx, got.TxID, []string{"CustomerChanged"})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(got.Events[200:201], changed, cmpJSON); diff != "" {
				t.Errorf("ReadCommitTypes of the large commit (-want +got):\n%s", diff)
			}
			if want := (eventstore.CommitSpan{Count: 400, First: got.First.Global, Last: got.Last.Global}); span != want {
				t.Errorf("ReadCommitTypes of the large commit: span %+v, want %+v", span, want)
			}
			company, err := s.ReadCompanyLog(ctx, "c1", small.Last, got.Last, 10)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(got.Events, company, cmpJSON); diff != "" {
				t.Errorf("ReadCompanyLog of the large commit (-want +got):\n%s", diff)
			}
			var each []eventstore.RecordedEvent
			if err := s.EachCompanyEvent(ctx, "c1", small.Last, got.Last, func(e eventstore.RecordedEvent) error {
				each = append(each, e)
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(got.Events, each, cmpJSON); diff != "" {
				t.Errorf("EachCompanyEvent of the large commit (-want +got):\n%s", diff)
			}
			for _, i := range []int{0, 7, 200, 399} {
				id := c.Streams[i].StreamID
				evs, err := s.ReadStream(ctx, id, 0)
				if err != nil {
					t.Fatal(err)
				}
				want := []eventstore.RecordedEvent{got.Events[i]}
				if i == 7 {
					want = append([]eventstore.RecordedEvent{small.Events[0]}, want...)
				}
				if diff := cmp.Diff(want, evs, cmpJSON); diff != "" {
					t.Errorf("ReadStream(%s) (-want +got):\n%s", id, diff)
				}
			}
			// A store opened afterwards rebuilds the same index.
			again := open(t, url, prefix)
			if evs, err := again.ReadStream(ctx, "customer-c1-0007", 1); err != nil || len(evs) != 1 || evs[0].StreamVersion != 2 {
				t.Errorf("reopened ReadStream = %v, %v; want version 2", evs, err)
			}

			// A large commit checked on a stale index writes its parts,
			// loses the race, finds the conflict and deletes its parts.
			bump := eventstore.Commit{Metadata: meta(), Streams: []eventstore.StreamAppend{{StreamID: "customer-c1-0007", ExpectedVersion: 2, Events: []eventstore.Event{event("CustomerChanged", 0, 0)}}}}
			if _, err := s.Append(ctx, bump); err != nil {
				t.Fatal(err)
			}
			late := largeCommit(400, 3000)
			for i := range late.Streams {
				late.Streams[i].StreamID += "-late"
			}
			late.Streams[200] = eventstore.StreamAppend{StreamID: "customer-c1-0007", ExpectedVersion: 2, Events: late.Streams[200].Events}
			var ce *eventstore.ConflictError
			if _, err := again.Append(ctx, late); !errors.As(err, &ce) || ce.Actual != 3 {
				t.Fatalf("large commit on a stale index = %v, want a conflict at version 3", err)
			}
			if name == "standin" {
				if parts := standInStreams(t, prefix+"-parts-"); len(parts) != 1 {
					t.Errorf("parts streams %v, want the first commit's only", parts)
				}
			}
		})
	}
}

// standInStreams returns the stand-in's streams whose name has prefix.
func standInStreams(t *testing.T, prefix string) []string {
	t.Helper()
	srv, err := standIn()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, n := range srv.StreamNames() {
		if strings.HasPrefix(n, prefix) {
			out = append(out, n)
		}
	}
	return out
}

var cmpJSON = cmp.Comparer(func(a, b json.RawMessage) bool {
	var va, vb any
	return json.Unmarshal(a, &va) == nil && json.Unmarshal(b, &vb) == nil && cmp.Equal(va, vb)
})

// TestTooLarge refuses, with ErrCommitTooLarge and nothing written, a
// commit whose record (its list of streams) exceeds the append size: set
// small, the adapter refuses before it sends anything.
func TestTooLarge(t *testing.T) {
	t.Parallel()
	for name, url := range servers(t) {
		t.Run(name, func(t *testing.T) {
			prefix := "test-" + uuid.NewString()
			s := openWith(t, url, esdb.Options{Prefix: prefix, MaxAppendSize: 64 << 10})
			_, err := s.Append(t.Context(), largeCommit(2000, 0)) // a record of 80 KB
			if !errors.Is(err, esdb.ErrCommitTooLarge) {
				t.Fatalf("Append = %v, want ErrCommitTooLarge", err)
			}
			if head, err := s.Head(t.Context()); err != nil || !head.IsZero() {
				t.Errorf("Head = %v, %v after a refused commit", head, err)
			}
			if name == "standin" {
				if got := standInStreams(t, prefix); len(got) != 0 {
					t.Errorf("a refused commit left streams %v", got)
				}
			}
		})
	}
}

// TestTwoWriters runs two stores on the same commit stream, as two
// processes would be: each sees the other's commits, and expected
// versions hold across them.
func TestTwoWriters(t *testing.T) {
	t.Parallel()
	for name, url := range servers(t) {
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			prefix := "test-" + uuid.NewString()
			a, b := open(t, url, prefix), open(t, url, prefix)
			one := eventstore.Commit{Metadata: meta(), Streams: []eventstore.StreamAppend{{StreamID: "s-c1-1", ExpectedVersion: eventstore.NoStream, Events: []eventstore.Event{event("A", 1, 0)}}}}
			if _, err := a.Append(ctx, one); err != nil {
				t.Fatal(err)
			}
			// b's index has not seen a's commit: appending at version 1
			// through b is no conflict (b catches up before saying so).
			two := one
			two.Streams = []eventstore.StreamAppend{{StreamID: "s-c1-1", ExpectedVersion: 1, Events: []eventstore.Event{event("B", 2, 0)}}}
			if _, err := b.Append(ctx, two); err != nil {
				t.Fatalf("append at version 1 through b = %v", err)
			}
			// a's index is behind now: creating the stream again through a
			// loses on the commit stream, then finds the true conflict.
			var ce *eventstore.ConflictError
			if _, err := a.Append(ctx, one); !errors.As(err, &ce) || ce.Actual != 2 {
				t.Fatalf("second creation through a = %v, want a conflict at version 2", err)
			}
			three := one
			three.Streams = []eventstore.StreamAppend{{StreamID: "s-c1-2", ExpectedVersion: eventstore.NoStream, Events: []eventstore.Event{event("C", 3, 0)}}}
			got, err := a.Append(ctx, three)
			if err != nil {
				t.Fatal(err)
			}
			if got.TxID != 3 || got.First.Global != 3 {
				t.Errorf("a's commit after b's at %v, want 3:3", got.First)
			}
			for _, s := range []*esdb.Store{a, b} {
				evs, err := s.ReadStream(ctx, "s-c1-1", 0)
				if err != nil || len(evs) != 2 {
					t.Errorf("ReadStream = %d events, %v; want 2", len(evs), err)
				}
				if head, err := s.Head(ctx); err != nil || head != got.Last {
					t.Errorf("Head = %v, %v; want %v", head, err, got.Last)
				}
			}
		})
	}
}
