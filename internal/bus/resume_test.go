package bus_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/google/go-cmp/cmp"

	"github.com/clientele/clientele/internal/bus"
)

// startResumer runs a Resumer of cfg, with keys handed to it before it
// starts, until the test ends, and waits for Run to return then.
func startResumer(t *testing.T, cfg bus.ResumerConfig, keys ...string) *bus.Resumer {
	t.Helper()
	r, err := bus.NewResumer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		r.Resume(k)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return r
}

// awaitValue returns the next value of ch, or fails the test after a while.
func awaitValue[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		t.Fatalf("no %s", what)
		panic("unreachable")
	}
}

var errBroken = errors.New("broken")

// TestResumerBacksOffAndResumes: a key whose CatchUp fails is tried
// again, after a wait that doubles from MinBackoff up to MaxBackoff, until
// it succeeds; the next failure after a success waits MinBackoff again.
func TestResumerBacksOffAndResumes(t *testing.T) {
	const lo, hi = time.Millisecond, 4 * time.Millisecond
	var mu sync.Mutex
	failures := 5
	waits := make(chan time.Duration, 10)
	caughtUp := make(chan struct{}, 10)
	r := startResumer(t, bus.ResumerConfig{
		MinBackoff: lo, MaxBackoff: hi,
		CatchUp: func(_ context.Context, key string) (bool, error) {
			mu.Lock()
			defer mu.Unlock()
			if failures > 0 {
				failures--
				return false, errBroken
			}
			caughtUp <- struct{}{}
			return false, nil
		},
		Failed: func(_ context.Context, key string, err error, retryIn time.Duration) {
			if key != "a" || !errors.Is(err, errBroken) {
				t.Errorf("Failed(%q, %v)", key, err)
			}
			waits <- retryIn
		},
	})
	r.Resume("a")
	var got []time.Duration
	for range 5 {
		got = append(got, awaitValue(t, waits, "failure"))
	}
	awaitValue(t, caughtUp, "catch-up after the failures")
	if diff := cmp.Diff([]time.Duration{lo, 2 * lo, hi, hi, hi}, got); diff != "" {
		t.Errorf("waits between attempts (-want +got):\n%s", diff)
	}

	mu.Lock()
	failures = 1
	mu.Unlock()
	r.Resume("a")
	if got := awaitValue(t, waits, "failure"); got != lo {
		t.Errorf("first wait after a success: %v, want %v", got, lo)
	}
	awaitValue(t, caughtUp, "catch-up after the failure")
}

// TestResumerFailingKeyBlocksNoOther: a key that keeps failing waits out
// its backoff while the others are caught up, one at a time as well as
// side by side; a key whose CatchUp hangs holds no other key's.
func TestResumerFailingKeyBlocksNoOther(t *testing.T) {
	t.Run("failing", func(t *testing.T) {
		failed := make(chan struct{}, 1)
		var order []string
		goodDone := make(chan struct{})
		steps := 0
		startResumer(t, bus.ResumerConfig{
			Parallel:   1,
			MinBackoff: time.Hour, MaxBackoff: time.Hour, // bad is not tried again within the test
			CatchUp: func(_ context.Context, key string) (bool, error) {
				order = append(order, key) // Parallel 1: one CatchUp at a time
				if key == "bad" {
					return false, errBroken
				}
				steps++
				if steps == 3 {
					close(goodDone)
				}
				return steps < 3, nil
			},
			Failed: func(context.Context, string, error, time.Duration) { failed <- struct{}{} },
		}, "bad", "good")
		awaitValue(t, failed, "failure of bad")
		awaitValue(t, goodDone, "catch-up of good")
		if diff := cmp.Diff([]string{"bad", "good", "good", "good"}, order); diff != "" {
			t.Errorf("CatchUps (-want +got):\n%s", diff)
		}
	})
	t.Run("hanging", func(t *testing.T) {
		hung := make(chan struct{})
		release := make(chan struct{})
		fastDone := make(chan struct{})
		r := startResumer(t, bus.ResumerConfig{
			Parallel: 2,
			CatchUp: func(ctx context.Context, key string) (bool, error) {
				if key == "slow" {
					close(hung)
					<-release
					return false, nil
				}
				close(fastDone)
				return false, nil
			},
		})
		defer close(release)
		r.Resume("slow")
		<-hung
		r.Resume("fast")
		awaitValue(t, fastDone, "catch-up of fast while slow hangs")
	})
}

// TestResumerKeysTakeTurns: keys with more to do take turns, one
// CatchUp each, so that no key waits for another's whole backlog.
func TestResumerKeysTakeTurns(t *testing.T) {
	left := map[string]int{"a": 3, "b": 3, "c": 1}
	var order []string
	done := make(chan struct{})
	startResumer(t, bus.ResumerConfig{
		CatchUp: func(_ context.Context, key string) (bool, error) {
			order = append(order, key) // Parallel 1: one CatchUp at a time
			left[key]--
			if left["a"]+left["b"]+left["c"] == 0 {
				close(done)
			}
			return left[key] > 0, nil
		},
	}, "a", "b", "a", "c") // a is in line already when handed again: no second turn
	awaitValue(t, done, "catch-up of every key")
	if diff := cmp.Diff([]string{"a", "b", "c", "a", "b", "a", "b"}, order); diff != "" {
		t.Errorf("CatchUps (-want +got):\n%s", diff)
	}
}

// TestResumerResumedWhileRunning: a key handed to the loop while its
// CatchUp runs is caught up once more after it, even though that CatchUp
// found nothing more to do: the work may have come after it looked.
func TestResumerResumedWhileRunning(t *testing.T) {
	started := make(chan struct{})
	release := make(chan struct{})
	calls := make(chan int, 2)
	n := 0
	r := startResumer(t, bus.ResumerConfig{
		CatchUp: func(context.Context, string) (bool, error) {
			n++
			if n == 1 {
				close(started)
				<-release
			}
			calls <- n
			return false, nil
		},
	})
	r.Resume("a")
	<-started
	r.Resume("a")
	close(release)
	awaitValue(t, calls, "first CatchUp")
	if got := awaitValue(t, calls, "second CatchUp"); got != 2 {
		t.Errorf("CatchUp %d, want 2", got)
	}
}

// TestTryThenResume: a delivery that keeps failing is tried Attempts
// times, then acked, and its key is caught up by the loop; a delivery cut
// short by its context is nacked, and one that succeeds resumes nothing.
func TestTryThenResume(t *testing.T) {
	resumed := make(chan string, 4)
	gaveUp := make(chan error, 4)
	r := startResumer(t, bus.ResumerConfig{
		Attempts:         3,
		RetryMaxInterval: time.Millisecond,
		Logger:           watermill.NopLogger{},
		CatchUp: func(_ context.Context, key string) (bool, error) {
			resumed <- key
			return false, nil
		},
		GaveUp: func(_ context.Context, key string, err error) { gaveUp <- err },
	})
	keyOf := func(msg *message.Message) (string, bool) { return string(msg.Payload), true }
	attempts := 0
	h := r.TryThenResume(keyOf)(func(msg *message.Message) ([]*message.Message, error) {
		attempts++
		if string(msg.Payload) == "ok" {
			return nil, nil
		}
		return nil, errBroken
	})

	if _, err := h(message.NewMessage("1", []byte("co-1"))); err != nil || attempts != 3 {
		t.Errorf("failing delivery: %v after %d attempts; want acked after 3", err, attempts)
	}
	if err := awaitValue(t, gaveUp, "GaveUp"); !errors.Is(err, errBroken) {
		t.Errorf("GaveUp with %v", err)
	}
	if key := awaitValue(t, resumed, "resumed key"); key != "co-1" {
		t.Errorf("resumed %q, want co-1", key)
	}

	attempts = 0
	msg := message.NewMessage("2", []byte("co-2"))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	msg.SetContext(ctx)
	if _, err := h(msg); err == nil {
		t.Error("delivery cut short: acked, want an error (a nack)")
	}
	if _, err := h(message.NewMessage("3", []byte("ok"))); err != nil {
		t.Errorf("succeeding delivery: %v", err)
	}
	r.Resume("end") // the loop is in order: nothing came before it
	if key := awaitValue(t, resumed, "resumed key"); key != "end" {
		t.Errorf("resumed %q, want only the key of the failed delivery", key)
	}
	select {
	case err := <-gaveUp:
		t.Errorf("GaveUp(%v) for a delivery that did not give up", err)
	default:
	}
}

// TestNewResumerChecksItsConfig: a Resumer needs a CatchUp, and no
// negative numbers.
func TestNewResumerChecksItsConfig(t *testing.T) {
	for _, cfg := range []bus.ResumerConfig{
		{},
		{CatchUp: func(context.Context, string) (bool, error) { return false, nil }, Parallel: -1},
		{CatchUp: func(context.Context, string) (bool, error) { return false, nil }, MaxBackoff: -time.Second},
	} {
		if r, err := bus.NewResumer(cfg); err == nil || r != nil {
			t.Errorf("NewResumer(%+v) = %v, %v; want an error", cfg, r, err)
		}
	}
}
