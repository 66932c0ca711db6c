package bus_test

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/clientele/clientele/internal/testlog"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
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
// outage waits for NATS and then receives everything. What was received
// may come again, in order (at least once; see receiveInOrder): the
// consumers skip it by their checkpoints.
func TestNATSOutage(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	srv := natstest.New(t)
	logs := &testlog.Buffer{}
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
	// has them. That it has them is no promise it keeps them: nats-server
	// 2.9 writes a consumer's acks to disk from a background flusher, and
	// its last write on a clean stop can lose to a stale one of that
	// flusher, so after the restart the group may get these five again
	// (receiveInOrder takes them as a checkpoint would).
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
	got = receiveInOrder(t, "early", early, got, len(want))
	if diff := cmp.Diff(want, got, eq); diff != "" {
		t.Errorf("the group subscribed before the outage received (-want +got):\n%s", diff)
	}
	msgs := <-late
	if msgs == nil {
		t.FailNow()
	}
	if diff := cmp.Diff(want, receiveInOrder(t, "late", msgs, nil, len(want)), eq); diff != "" {
		t.Errorf("the group subscribed during the outage received (-want +got):\n%s", diff)
	}
}

// receiveInOrder receives from msgs, acking each, until got, what the
// group took so far, holds n messages, and returns it. It takes them as
// a projector takes commits with its checkpoint: a message at or before
// the last it took (seq, a position) is a redelivery and skipped, and
// must be one it took, unchanged, else it came out of order and a
// consumer would lose it. JetStream delivers at least once: it
// redelivers a message that no one acked within the ack wait, here
// short, which a message can outlast while the test reads another
// group; and a server that restarts delivers again from the acks its
// store kept, which may be fewer than it had confirmed (see
// TestNATSOutage). Whether, or how far, it goes back is not the test's
// to say; that it goes on in order after is.
func receiveInOrder(t *testing.T, group string, msgs <-chan *message.Message, got []note, n int) []note {
	t.Helper()
	took := map[int]note{}
	for _, m := range got {
		took[m.seq] = m
	}
	again := 0
	for len(got) < n {
		msg := next(t, msgs)
		m := parse(msg)
		msg.Ack()
		if len(got) > 0 && m.seq <= got[len(got)-1].seq {
			if took[m.seq] != m {
				t.Errorf("group %s: %v came after %v, which it never took before", group, m, got[len(got)-1])
			}
			again++
			continue
		}
		took[m.seq] = m
		got = append(got, m)
	}
	if again > 0 {
		t.Logf("group %s: %d messages came again", group, again)
	}
	return got
}

// TestNATSLostStreamAndConsumer: NATS loses the stream (a server back
// with an empty store, an operator who deleted it), then a group's
// consumer alone. The relay makes the stream again, every process makes
// its groups' consumers again, and the subscriptions, left as they
// were, receive the messages published after, in order.
func TestNATSLostStreamAndConsumer(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	srv := natstest.New(t)
	logs := logOnFailure(t, srv)
	tr, err := bus.NewNATS(pool, bus.NATSConfig{URL: srv.URL(), RetryInterval: 100 * time.Millisecond,
		PruneInterval: 100 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Relay: bus.PostgresConfig{PollInterval: 10 * time.Millisecond, ResendInterval: 50 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tr.Close() })
	js := natstest.JetStream(t, srv.URL())
	acked := func(n uint64) func() bool {
		return func() bool {
			info, err := js.ConsumerInfo(bus.CommitsTopic, "healed")
			return err == nil && info.AckFloor.Consumer == n && info.NumAckPending == 0
		}
	}
	eq := cmp.Comparer(func(a, b note) bool { return a == b })
	want := interleaved(0, 15)
	msgs, _ := subscribe(t, tr, "healed", bus.CommitsTopic)
	publish(t, pool, bus.CommitsTopic, want[:5]...)
	got := receive(t, msgs, 5)
	waitFor(t, acked(5))

	if err := js.DeleteStream(bus.CommitsTopic); err != nil {
		t.Fatal(err)
	}
	publish(t, pool, bus.CommitsTopic, want[5:10]...)
	got = append(got, receive(t, msgs, 5)...)
	waitFor(t, acked(5)) // a new consumer: its sequence starts again

	// nats-server 2.9 may fail a delete ("directory not empty") and
	// remove the consumer all the same, which a heal may have made again
	// meanwhile: delete while the consumer is the one that was there,
	// never the one made again, which would push its first message a
	// second time.
	lost, err := js.ConsumerInfo(bus.CommitsTopic, "healed")
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool {
		info, err := js.ConsumerInfo(bus.CommitsTopic, "healed")
		if err != nil || !info.Created.Equal(lost.Created) {
			return err == nil
		}
		if err := js.DeleteConsumer(bus.CommitsTopic, "healed"); err != nil {
			t.Logf("delete the consumer: %v", err)
		}
		return false
	})
	// The consumer made again delivers the stream from its start: the
	// five messages it already had come again (at least once), then the
	// new ones.
	publish(t, pool, bus.CommitsTopic, want[10:]...)
	again := receive(t, msgs, 10)
	if diff := cmp.Diff(want[5:], again, eq); diff != "" {
		t.Errorf("after the consumer was lost (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want[:10], got, eq); diff != "" {
		t.Errorf("before and after the stream was lost (-want +got):\n%s", diff)
	}
}

// TestNATSStreamMadeWhileDeleted: an operator deletes a stream and the
// transport makes it again at once, while nats-server 2.9, which
// answers that the stream is gone as soon as its deletion begins, still
// removes the old stream's files, and with them the new one's: the new
// stream acks messages it cannot deliver. The transport reads back the
// first message it relays after it found the stream missing, makes the
// stream again when that one is lost, and publishes it again: the group
// receives every message published after the deletion, in order.
func TestNATSStreamMadeWhileDeleted(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	srv := natstest.New(t)
	logs := logOnFailure(t, srv)
	// Heal as often as it can, to make the stream within the deletion.
	tr, err := bus.NewNATS(pool, bus.NATSConfig{URL: srv.URL(), RetryInterval: 100 * time.Millisecond,
		PruneInterval: time.Millisecond, Logger: slog.New(slog.NewTextHandler(logs, nil)),
		Relay: bus.PostgresConfig{PollInterval: 10 * time.Millisecond, ResendInterval: 50 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tr.Close() })
	js := natstest.JetStream(t, srv.URL())
	msgs, _ := subscribe(t, tr, "remade", bus.CommitsTopic)
	// Consumers of other groups make the deletion long: NATS removes
	// the files of each before those of the stream.
	for i := range 50 {
		if _, err := js.AddConsumer(bus.CommitsTopic, &nats.ConsumerConfig{Durable: fmt.Sprintf("idle%d", i),
			AckPolicy: nats.AckExplicitPolicy}); err != nil {
			t.Fatal(err)
		}
	}
	if err := js.DeleteStream(bus.CommitsTopic); err != nil {
		t.Fatal(err)
	}
	want := interleaved(0, 5)
	publish(t, pool, bus.CommitsTopic, want...)
	if diff := cmp.Diff(want, receive(t, msgs, len(want)), cmp.Comparer(func(a, b note) bool { return a == b })); diff != "" {
		t.Errorf("received (-want +got):\n%s", diff)
	}
	t.Logf("made again while deleted: %v", strings.Contains(logs.String(), "lost its store"))
}

// logOnFailure returns a sink for the transport's logs, which the test
// prints with the server's if it fails.
func logOnFailure(t *testing.T, srv *natstest.Server) *testlog.Buffer {
	logs := &testlog.Buffer{}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("transport logs:\n%s\nnats-server logs:\n%s", logs.String(), srv.Log())
		}
	})
	return logs
}

// TestNATSFailedSubscribeLeavesNoConnection: a subscription that fails
// after its consumer was checked (here for good: an operator's consumer
// of the group's name without a deliver group; as well NATS going away
// at that moment) is retried, and each failed attempt closes the
// connection it opened. watermill-nats' Close of a subscriber whose
// Subscribe failed waits its CloseTimeout and then leaves the connection
// open, reconnecting for ever.
func TestNATSFailedSubscribeLeavesNoConnection(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	srv := natstest.New(t)
	logs := &testlog.Buffer{}
	tr, err := bus.NewNATS(pool, bus.NATSConfig{URL: srv.URL(), RetryInterval: 50 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tr.Close() })
	if err := tr.EnsureStream(bus.CommitsTopic); err != nil {
		t.Fatal(err)
	}
	js := natstest.JetStream(t, srv.URL())
	if _, err := js.AddConsumer(bus.CommitsTopic, &nats.ConsumerConfig{Durable: "odd", DeliverSubject: "odd.deliver",
		AckPolicy: nats.AckExplicitPolicy, AckWait: tr.AckWait(), MaxAckPending: 1}); err != nil {
		t.Fatal(err)
	}
	sub, err := tr.Subscriber("odd")
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := sub.Subscribe(ctx, bus.CommitsTopic)
		done <- err
	}()
	waitFor(t, func() bool { return strings.Contains(logs.String(), "cannot subscribe to NATS") })
	cancel()
	if err := <-done; err == nil {
		t.Fatal("subscribed to a consumer without a deliver group")
	}
	// The group's connections, as the server sees them.
	conns := func() int {
		res, err := http.Get(srv.MonitorURL() + "/connz")
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var connz struct{ Connections []struct{ Name string } }
		if err := json.NewDecoder(res.Body).Decode(&connz); err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, c := range connz.Connections {
			if strings.HasPrefix(c.Name, "clientele odd ") {
				n++
			}
		}
		return n
	}
	waitFor(t, func() bool { return conns() == 0 })
}

// TestNATSCloseHandsOnHeldMessage: a node that stops cleanly while NATS
// has pushed it a message its handler has not taken hands the message
// on at once (nacks it), instead of holding its group for the ack wait,
// here ten minutes, far longer than the test waits: also when the
// message is still in the client library, or on the wire, as it may be
// when Close follows NATS' push closely, as here.
func TestNATSCloseHandsOnHeldMessage(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	srv := natstest.New(t)
	logs := logOnFailure(t, srv)
	tr, err := bus.NewNATS(pool, bus.NATSConfig{URL: srv.URL() + "?ack_wait=10m", RetryInterval: 100 * time.Millisecond,
		Relay:  bus.PostgresConfig{PollInterval: 10 * time.Millisecond, ResendInterval: 50 * time.Millisecond},
		Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: watermill.LevelTrace}))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tr.Close() })
	js := natstest.JetStream(t, srv.URL())
	t.Cleanup(func() {
		if t.Failed() {
			info, err := js.ConsumerInfo(bus.CommitsTopic, "handover")
			if err != nil {
				t.Logf("consumer info: %v", err)
				return
			}
			t.Logf("consumer: delivered %+v, ack floor %+v, ack pending %d, redelivered %d, waiting %d, pending %d",
				info.Delivered, info.AckFloor, info.NumAckPending, info.NumRedelivered, info.NumWaiting, info.NumPending)
		}
	})
	// Node A subscribes and takes nothing.
	subA, err := tr.Subscriber("handover")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := subA.Subscribe(context.Background(), bus.CommitsTopic); err != nil {
		t.Fatal(err)
	}
	want := interleaved(0, 3)
	publish(t, pool, bus.CommitsTopic, want...)
	waitFor(t, func() bool {
		info, err := js.ConsumerInfo(bus.CommitsTopic, "handover")
		return err == nil && info.NumAckPending == 1
	})
	if err := subA.Close(); err != nil {
		t.Fatal(err)
	}
	msgs, _ := subscribe(t, tr, "handover", bus.CommitsTopic)
	if diff := cmp.Diff(want, receive(t, msgs, len(want)), cmp.Comparer(func(a, b note) bool { return a == b })); diff != "" {
		t.Errorf("node B received (-want +got):\n%s", diff)
	}
}

// TestNATSReplicatedStreams: on a three-server cluster, with the three
// URLs and replicas=3, the transport makes its stream with three copies,
// and a group subscribed through it goes on receiving, in order, what
// is published after the server leading the stream is killed (kill -9):
// the client moves to another server, the stream elects another leader,
// nothing acknowledged is lost. The killed server, restarted, catches up.
func TestNATSReplicatedStreams(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	cl := natstest.NewCluster(t, 3)
	logs := &testlog.Buffer{}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("transport logs:\n%s", logs.String())
			for _, s := range cl.Servers {
				t.Logf("nats-server %s:\n%s", s.URL(), s.Log())
			}
		}
	})
	tr, err := bus.NewNATS(pool, bus.NATSConfig{URL: cl.URL() + "?replicas=3&ack_wait=2s", RetryInterval: 100 * time.Millisecond,
		Relay:  bus.PostgresConfig{PollInterval: 10 * time.Millisecond, ResendInterval: 50 * time.Millisecond},
		Logger: slog.New(slog.NewTextHandler(logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tr.Close() })
	want := interleaved(0, 20)
	msgs, _ := subscribe(t, tr, "replicated", bus.CommitsTopic)
	publish(t, pool, bus.CommitsTopic, want[:10]...)
	got := receive(t, msgs, 10)

	nc, err := nats.Connect(cl.URL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := nc.JetStream()
	if err != nil {
		t.Fatal(err)
	}
	info, err := js.StreamInfo(bus.CommitsTopic)
	if err != nil {
		t.Fatal(err)
	}
	if info.Config.Replicas != 3 || info.Cluster == nil || len(info.Cluster.Replicas) != 2 {
		t.Fatalf("stream %s: %d replicas, cluster %+v; want 3 (a leader and 2 more)", bus.CommitsTopic, info.Config.Replicas, info.Cluster)
	}
	var leader *natstest.Server
	for i, s := range cl.Servers {
		if info.Cluster.Leader == fmt.Sprintf("n%d", i+1) {
			leader = s
		}
	}
	if leader == nil {
		t.Fatalf("stream leader %q is none of the cluster's servers", info.Cluster.Leader)
	}
	leader.Kill()
	killed := time.Now()
	publish(t, pool, bus.CommitsTopic, want[10:]...)
	got = receiveInOrder(t, "replicated", msgs, got, len(want))
	t.Logf("received the 10 published after the kill of the stream leader %s in %v", info.Cluster.Leader, time.Since(killed).Round(time.Millisecond))
	if diff := cmp.Diff(want, got, cmp.Comparer(func(a, b note) bool { return a == b })); diff != "" {
		t.Errorf("received across the kill of the stream's leader (-want +got):\n%s", diff)
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := leader.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	restarted := time.Now()
	defer func() { t.Logf("the restarted server caught up in %v", time.Since(restarted).Round(time.Millisecond)) }()
	waitFor(t, func() bool {
		info, err := js.StreamInfo(bus.CommitsTopic)
		if err != nil || info.Cluster == nil || len(info.Cluster.Replicas) != 2 {
			return false
		}
		for _, r := range info.Cluster.Replicas {
			if !r.Current || r.Offline {
				return false
			}
		}
		return info.State.Msgs == uint64(len(want))
	})
}
