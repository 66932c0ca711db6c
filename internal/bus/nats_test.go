package bus_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/google/go-cmp/cmp"
	"github.com/nats-io/nats.go"

	"github.com/clientele/clientele/internal/bus"
	"github.com/clientele/clientele/internal/natstest"
	"github.com/clientele/clientele/internal/pg/pgtest"
)

// TestNATSOutage stops the NATS server under a subscribed group while
// messages are published, and starts it again: nothing published in the
// meantime is lost (the outbox keeps it; the relay forwards it once NATS
// is back), the order holds, and a group that subscribes during the
// outage waits for NATS and then receives everything.
func TestNATSOutage(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	srv := natstest.New(t)
	logs := &lockedBuffer{}
	tr, err := bus.NewNATS(pool, bus.NATSConfig{URL: srv.URL() + "?ack_wait=2s", RetryInterval: 100 * time.Millisecond,
		Relay:  bus.PostgresConfig{PollInterval: 10 * time.Millisecond, ResendInterval: 50 * time.Millisecond},
		Logger: slog.New(slog.NewTextHandler(logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tr.Close() })
	want := interleaved(0, 20)
	early, _ := subscribe(t, tr, "early", bus.CommitsTopic)
	publish(t, pool, bus.CommitsTopic, want[:5]...)
	got := receive(t, early, 5)
	// Acks reach the server after Ack returns: the outage starts once it
	// has them (an ack it lost would bring the message again, which is
	// the contract, at least once, but not what this test looks at).
	nc, err := nats.Connect(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	js, err := nc.JetStream()
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool {
		info, err := js.ConsumerInfo(bus.CommitsTopic, "early")
		return err == nil && info.AckFloor.Consumer == 5 && info.NumAckPending == 0
	})
	nc.Close()

	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}
	publish(t, pool, bus.CommitsTopic, want[5:10]...)
	late := make(chan (<-chan *message.Message), 1)
	go func() {
		sub, err := tr.Subscriber("late")
		if err != nil {
			t.Error(err)
			late <- nil
			return
		}
		t.Cleanup(func() { sub.Close() })
		msgs, err := sub.Subscribe(context.Background(), bus.CommitsTopic)
		if err != nil {
			t.Error(err)
		}
		late <- msgs
	}()
	publish(t, pool, bus.CommitsTopic, want[10:15]...)
	// The outage lasts until the late group has failed to subscribe.
	waitFor(t, func() bool { return strings.Contains(logs.String(), "cannot subscribe to NATS") })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := srv.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	publish(t, pool, bus.CommitsTopic, want[15:]...)

	eq := cmp.Comparer(func(a, b note) bool { return a == b })
	got = append(got, receive(t, early, 15)...)
	if diff := cmp.Diff(want, got, eq); diff != "" {
		t.Errorf("the group subscribed before the outage received (-want +got):\n%s", diff)
	}
	msgs := <-late
	if msgs == nil {
		t.FailNow()
	}
	if diff := cmp.Diff(want, receive(t, msgs, len(want)), eq); diff != "" {
		t.Errorf("the group subscribed during the outage received (-want +got):\n%s", diff)
	}
}
