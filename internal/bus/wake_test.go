package bus_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/clientele/clientele/internal/bus"
	"github.com/clientele/clientele/projections"
)

// TestCommitWakesIdleSubscriber: a subscriber that polls once an hour
// still reads each commit of the store whose commits wake it, and closes
// without waiting out its poll. Without the wake, the test would time
// out waiting for the second commit (the first is read by the query the
// subscription starts with) and again when closing.
func TestCommitWakesIdleSubscriber(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// A server of its own: a transaction of another test on the shared
	// server holds every reader of the outbox back (pg_snapshot_xmin),
	// and with an hour's poll the subscriber would look again too late.
	_, pool, store := privateStore(t)
	transport, err := bus.NewPostgres(pool, bus.PostgresConfig{PollInterval: time.Hour, Wake: store.Commits()})
	if err != nil {
		t.Fatal(err)
	}
	sub, err := transport.Subscriber("test")
	if err != nil {
		t.Fatal(err)
	}
	msgs, err := sub.Subscribe(ctx, bus.CommitsTopic)
	if err != nil {
		t.Fatal(err)
	}
	for i, stream := range []string{"tick-acme-a", "tick-acme-b", "tick-acme-c"} {
		c, err := store.Append(ctx, commit("acme", stream, 1))
		if err != nil {
			t.Fatal(err)
		}
		select {
		case msg := <-msgs:
			h, err := bus.ParseCommitHeader(msg.Payload)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(projections.HeaderOf(c), h); diff != "" {
				t.Errorf("commit %d: header (-want +got):\n%s", i, diff)
			}
			msg.Ack()
		case <-ctx.Done():
			t.Fatalf("commit %d was not read: the subscriber was not woken", i)
		}
	}
	closed := make(chan error, 1)
	go func() { closed <- sub.Close() }()
	select {
	case err := <-closed:
		if err != nil {
			t.Fatal(err)
		}
	case <-ctx.Done():
		t.Fatal("Close waited for the poll")
	}
}
