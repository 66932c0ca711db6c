package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/clientele/clientele/eventstore"
)

const (
	writers          = 8
	appendsPerWriter = 5
	// maxAttempts stops a writer that never wins; far above what fair
	// contention between writers needs.
	maxAttempts = 1000
)

type mark struct {
	Writer int `json:"writer"`
	N      int `json:"n"`
}

// testConcurrentExpectedVersion runs writers that each read the stream,
// append with the version they read and retry on conflict: the classic
// optimistic loop, including the race to create the stream.
func testConcurrentExpectedVersion(t *testing.T, s eventstore.Store) {
	const id = "counter-c1-1"
	var other sync.Map
	var conflicts atomic.Int64
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			var version int64
			for n, attempt := 0, 0; n < appendsPerWriter; attempt++ {
				if attempt == maxAttempts {
					other.Store(w, fmt.Errorf("gave up after %d attempts", attempt))
					return
				}
				evs, err := s.ReadStream(t.Context(), id, version)
				if err != nil {
					other.Store(w, err)
					return
				}
				if len(evs) > 0 {
					version = evs[len(evs)-1].StreamVersion
				}
				_, err = s.Append(t.Context(), commit(id, version, markEvent(w, n)))
				var ce *eventstore.ConflictError
				switch {
				case err == nil:
					n++
				case errors.As(err, &ce) && ce.StreamID == id:
					// Lost the race: read again and retry.
					conflicts.Add(1)
				default:
					other.Store(w, err)
					return
				}
			}
		})
	}
	wg.Wait()
	other.Range(func(w, err any) bool {
		t.Errorf("writer %v: %v (want success or a ConflictError for %q)", w, err, id)
		return true
	})
	checkMarks(t, readStream(t, s, id, 0))
	t.Logf("%d conflicts retried", conflicts.Load())
}

// testConcurrentAny runs writers that skip the version check: none may be
// refused, not even in the race to create the stream.
func testConcurrentAny(t *testing.T, s eventstore.Store) {
	const id = "log-c1-any"
	var wg sync.WaitGroup
	errs := make([]error, writers)
	for w := range writers {
		wg.Go(func() {
			for n := range appendsPerWriter {
				if _, err := s.Append(t.Context(), commit(id, eventstore.Any, markEvent(w, n))); err != nil {
					errs[w] = err
					return
				}
			}
		})
	}
	wg.Wait()
	for w, err := range errs {
		if err != nil {
			t.Errorf("writer %d: %v", w, err)
		}
	}
	checkMarks(t, readStream(t, s, id, 0))
}

func markEvent(w, n int) eventstore.Event {
	data, _ := json.Marshal(mark{Writer: w, N: n})
	return eventstore.Event{Type: "Marked", Data: data}
}

// checkMarks checks that the stream has versions 1..N without gap and
// every writer's appends exactly once, in the writer's order.
func checkMarks(t *testing.T, evs []eventstore.RecordedEvent) {
	t.Helper()
	if diff := cmp.Diff(seq(1, writers*appendsPerWriter), versions(evs)); diff != "" {
		t.Errorf("stream versions (-want +got):\n%s", diff)
	}
	next := make(map[int]int)
	for _, e := range evs {
		var m mark
		if err := json.Unmarshal(e.Data, &m); err != nil {
			t.Fatalf("version %d: %v", e.StreamVersion, err)
		}
		if m.N != next[m.Writer] {
			t.Errorf("version %d: writer %d append %d, want append %d", e.StreamVersion, m.Writer, m.N, next[m.Writer])
		}
		next[m.Writer] = m.N + 1
	}
}
