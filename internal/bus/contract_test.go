package bus_test

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/clientele/clientele/commands/imports"
	"github.com/clientele/clientele/internal/bus"
	"github.com/clientele/clientele/internal/natstest"
	"github.com/clientele/clientele/internal/pg/pgtest"
)

// The bus contract, which every Transport keeps and the consumers rely
// on: publishing goes through the outbox; every consumer group receives
// every message at least once, in publication order (so each company's
// messages in order); the subscribers of one group, on several nodes,
// share the messages without reordering them; a nacked message, or one
// its subscriber left unacked when it went away, comes again before any
// later one; and a group that subscribes again resumes no later than
// right after the last message it acked.

// transports builds each Transport on pool, for one test.
var transports = map[string]func(t *testing.T, pool *pgxpool.Pool) bus.Transport{
	"postgres": func(t *testing.T, pool *pgxpool.Pool) bus.Transport {
		tr, err := bus.NewPostgres(pool, bus.PostgresConfig{PollInterval: 10 * time.Millisecond, ResendInterval: 50 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		return tr
	},
	"nats": func(t *testing.T, pool *pgxpool.Pool) bus.Transport {
		srv := natstest.New(t)
		// A short ack wait: the test of a subscriber that goes away
		// waits it out.
		tr, err := bus.NewNATS(pool, bus.NATSConfig{URL: srv.URL() + "?ack_wait=1s", RetryInterval: 100 * time.Millisecond,
			Relay: bus.PostgresConfig{PollInterval: 10 * time.Millisecond, ResendInterval: 50 * time.Millisecond}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { tr.Close() })
		return tr
	},
}

// contract runs fn on every transport, in parallel.
func contract(t *testing.T, fn func(t *testing.T, pool *pgxpool.Pool, tr bus.Transport)) {
	for name, build := range transports {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			pool := pgtest.NewPool(t)
			fn(t, pool, build(t, pool))
		})
	}
}

// note is a test message: company and sequence number.
type note struct {
	company string
	seq     int
}

func (n note) String() string { return fmt.Sprintf("%s/%d", n.company, n.seq) }

// publish writes notes through the outbox on topic, in one transaction.
func publish(t *testing.T, pool *pgxpool.Pool, topic string, notes ...note) {
	t.Helper()
	ctx := context.Background()
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		pub, err := bus.OutboxPublisher(tx, watermill.NopLogger{})
		if err != nil {
			return err
		}
		for _, n := range notes {
			msg := message.NewMessage(watermill.NewUUID(), []byte(strconv.Itoa(n.seq)))
			msg.Metadata.Set("company_id", n.company)
			msg.SetContext(ctx)
			if err := pub.Publish(topic, msg); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// interleaved returns n notes of companies a, b and c in turn, numbered
// from first.
func interleaved(first, n int) []note {
	var out []note
	for i := first; i < first+n; i++ {
		out = append(out, note{company: []string{"a", "b", "c-" + strconv.Itoa(i%2)}[i%3], seq: i})
	}
	return out
}

// parse reads a test message; a payload that is not one has seq -1,
// which no test expects.
func parse(msg *message.Message) note {
	seq, err := strconv.Atoi(string(msg.Payload))
	if err != nil {
		seq = -1
	}
	return note{company: msg.Metadata.Get("company_id"), seq: seq}
}

// subscribe subscribes a new subscriber of group to topic; the
// subscription ends with the test.
func subscribe(t *testing.T, tr bus.Transport, group, topic string) (<-chan *message.Message, message.Subscriber) {
	t.Helper()
	sub, err := tr.Subscriber(group)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() {
		cancel()
		sub.Close()
	})
	msgs, err := sub.Subscribe(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	return msgs, sub
}

// next returns the next message of msgs, failing the test after a
// generous deadline (it bounds a hang; no speed is asserted). Both
// transports read the outbox below pg_snapshot_xmin, which a long
// transaction of any other test on the shared server holds back.
func next(t *testing.T, msgs <-chan *message.Message) *message.Message {
	t.Helper()
	select {
	case msg, ok := <-msgs:
		if !ok {
			t.Fatal("the subscription ended")
		}
		return msg
	case <-time.After(2 * time.Minute):
		t.Fatal("no message within 2 minutes")
	}
	return nil
}

// receive acks n messages of msgs and returns them in the order received.
func receive(t *testing.T, msgs <-chan *message.Message, n int) []note {
	t.Helper()
	var got []note
	for range n {
		msg := next(t, msgs)
		got = append(got, parse(msg))
		msg.Ack()
	}
	return got
}

// TestContractEveryGroupInOrder: two groups each receive every message,
// those published before they subscribed and after, in publication
// order.
func TestContractEveryGroupInOrder(t *testing.T) {
	contract(t, func(t *testing.T, pool *pgxpool.Pool, tr bus.Transport) {
		want := interleaved(0, 30)
		publish(t, pool, bus.CommitsTopic, want[:10]...)
		first, _ := subscribe(t, tr, "first", bus.CommitsTopic)
		second, _ := subscribe(t, tr, "second", bus.CommitsTopic)
		publish(t, pool, bus.CommitsTopic, want[10:20]...)
		publish(t, pool, bus.CommitsTopic, want[20:]...)
		// Both groups consume at once, as consumers do: on PostgreSQL a
		// group that holds a message unread keeps its transaction open,
		// and with it every reader of the outbox below pg_snapshot_xmin.
		got := map[string][]note{}
		var mu sync.Mutex
		var wg sync.WaitGroup
		for name, msgs := range map[string]<-chan *message.Message{"first": first, "second": second} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var notes []note
				for range want {
					select {
					case msg := <-msgs:
						notes = append(notes, parse(msg))
						msg.Ack()
					case <-time.After(2 * time.Minute):
						t.Errorf("group %s: no message within 2 minutes", name)
						return
					}
				}
				mu.Lock()
				got[name] = notes
				mu.Unlock()
			}()
		}
		wg.Wait()
		for _, name := range []string{"first", "second"} {
			if diff := cmp.Diff(want, got[name], cmp.Comparer(func(a, b note) bool { return a == b })); diff != "" {
				t.Errorf("group %s received (-want +got):\n%s", name, diff)
			}
		}
	})
}

// TestContractSharedGroup: two subscribers of one group (two nodes)
// share its messages: together they receive each once, in publication
// order, and a message the first leaves unacked when it goes away (its
// node died) comes to the other before any later one.
func TestContractSharedGroup(t *testing.T) {
	contract(t, func(t *testing.T, pool *pgxpool.Pool, tr bus.Transport) {
		want := interleaved(0, 40)
		msgsA, subA := subscribe(t, tr, "shared", imports.ChunksTopic)
		msgsB, _ := subscribe(t, tr, "shared", imports.ChunksTopic)
		publish(t, pool, imports.ChunksTopic, want[:20]...)

		var mu sync.Mutex
		var got []note
		var wg sync.WaitGroup
		stopA := make(chan struct{})
		took := make(chan note, 1)
		done := make(chan struct{})
		// Node A acks what it gets until it is told to stop; then it takes
		// one more message, leaves it unacked and closes.
		wg.Add(2)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stopA:
					select {
					case msg := <-msgsA:
						took <- parse(msg)
					case <-done:
					}
					subA.Close()
					return
				case msg := <-msgsA:
					mu.Lock()
					got = append(got, parse(msg))
					mu.Unlock()
					msg.Ack()
				}
			}
		}()
		go func() {
			defer wg.Done()
			for {
				select {
				case <-done:
					return
				case msg, ok := <-msgsB:
					if !ok {
						return
					}
					mu.Lock()
					got = append(got, parse(msg))
					mu.Unlock()
					msg.Ack()
				}
			}
		}()
		count := func() int {
			mu.Lock()
			defer mu.Unlock()
			return len(got)
		}
		waitFor(t, func() bool { return count() == 20 })
		close(stopA)
		publish(t, pool, imports.ChunksTopic, want[20:]...)
		waitFor(t, func() bool { return count() == len(want) })
		close(done)
		wg.Wait()
		// A took one of the later messages, or B took them all first.
		var unacked *note
		select {
		case n := <-took:
			unacked = &n
		default:
		}
		if diff := cmp.Diff(want, got, cmp.Comparer(func(a, b note) bool { return a == b })); diff != "" {
			t.Errorf("the group received (-want +got):\n%s", diff)
		}
		if unacked != nil {
			t.Logf("node A left %v unacked; node B received it", *unacked)
		}
	})
}

// TestContractNackAndResume: a nacked message comes again before any
// later one; a group that subscribes again resumes after the last
// message it acked.
func TestContractNackAndResume(t *testing.T) {
	contract(t, func(t *testing.T, pool *pgxpool.Pool, tr bus.Transport) {
		want := interleaved(0, 12)
		publish(t, pool, bus.CommitsTopic, want...)
		sub, err := tr.Subscriber("resumer")
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		msgs, err := sub.Subscribe(ctx, bus.CommitsTopic)
		if err != nil {
			t.Fatal(err)
		}
		got := receive(t, msgs, 3)
		msg := next(t, msgs)
		if n := parse(msg); n != want[3] {
			t.Fatalf("received %v, want %v", n, want[3])
		}
		msg.Nack()
		got = append(got, receive(t, msgs, 3)...)
		cancel()
		sub.Close()
		if diff := cmp.Diff(want[:6], got, cmp.Comparer(func(a, b note) bool { return a == b })); diff != "" {
			t.Errorf("before the nack and after (-want +got):\n%s", diff)
		}
		// At least once: the group resumes at a message it acked (the
		// PostgreSQL transport commits its offset per batch) or right
		// after the last, never later, and goes on in order.
		again, _ := subscribe(t, tr, "resumer", bus.CommitsTopic)
		msg = next(t, again)
		first := parse(msg)
		msg.Ack()
		if first.seq < 0 || first.seq > 6 {
			t.Fatalf("resumed at %v, want at most %v", first, want[6])
		}
		rest := append([]note{first}, receive(t, again, len(want)-first.seq-1)...)
		if diff := cmp.Diff(want[first.seq:], rest, cmp.Comparer(func(a, b note) bool { return a == b })); diff != "" {
			t.Errorf("after resuming (-want +got):\n%s", diff)
		}
		t.Logf("resumed at %v after acking up to %v", first, want[5])
	})
}

// waitFor waits until cond holds, failing the test after a generous
// deadline.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(2 * time.Minute); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 2 minutes")
		}
	}
}
