package imports

import (
	"context"
	"reflect"
	"sync"
	"time"

	"github.com/clientele/clientele/domain/company"
)

// parseAhead prepares a run's next chunk while the current one is in its
// transaction. A chunk's work is Go (parsing and validating its records,
// half of it phone numbers) then database (the registry, the commit, the
// state), one after the other, and the chunks of a company follow one
// another: preparing chunk n+1 during the database part of chunk n takes
// its parsing off that chain. The prepared records are used only if the
// chunk is the one prepared and its company is unchanged (the parsers read
// nothing else), so the outcome is the same as parsing in the transaction.
type parseAhead struct {
	store *Store

	mu    sync.Mutex
	slots map[aheadKey]*aheadSlot
}

// aheadKey names a chunk.
type aheadKey struct {
	run string
	seq int
}

// aheadSlot is a chunk being prepared or prepared; done is closed when
// prepared is set (nil if the chunk could not be read).
type aheadSlot struct {
	co       company.Company
	started  time.Time
	done     chan struct{}
	prepared Prepared
}

// maxAhead bounds the chunks prepared and not yet applied (one per company
// applying side by side, in practice): each holds a chunk's records.
const maxAhead = 4

// aheadTimeout bounds the read of a chunk to prepare.
const aheadTimeout = time.Minute

func newParseAhead(store *Store) *parseAhead {
	return &parseAhead{store: store, slots: map[aheadKey]*aheadSlot{}}
}

// start prepares chunk seq of run with p for co in the background, unless
// it is being prepared already or too many are. Preparations nobody took
// within aheadTimeout (the chunk did not exist, another process applied
// it) are dropped. It returns a channel closed when the preparation it
// started ends (its slot filled, or dropped), or nil when it started none.
func (a *parseAhead) start(p Preparer, run string, seq int, co company.Company) <-chan struct{} {
	k := aheadKey{run, seq}
	now := time.Now()
	a.mu.Lock()
	for old, s := range a.slots {
		if now.Sub(s.started) > aheadTimeout {
			delete(a.slots, old)
		}
	}
	if _, ok := a.slots[k]; ok || len(a.slots) >= maxAhead {
		a.mu.Unlock()
		return nil
	}
	s := &aheadSlot{co: co, started: now, done: make(chan struct{})}
	a.slots[k] = s
	a.mu.Unlock()
	go func() {
		defer close(s.done)
		defer func() {
			if recover() != nil {
				// The chunk's transaction parses it again, where a panic is
				// the handler's to recover, not this process's end.
				s.prepared = nil
			}
		}()
		ctx, cancel := context.WithTimeout(context.Background(), aheadTimeout)
		defer cancel()
		records, ok, err := a.store.PeekChunk(ctx, run, seq)
		if err != nil || !ok {
			// No such chunk (the run's last was applied) or no reading it:
			// the chunk's transaction parses it, if there is one.
			a.drop(k, s)
			return
		}
		s.prepared = p.Prepare(co, records)
	}()
	return s.done
}

// drop forgets slot s of chunk k, unless another took its place.
func (a *parseAhead) drop(k aheadKey, s *aheadSlot) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.slots[k] == s {
		delete(a.slots, k)
	}
}

// take returns what was prepared for chunk seq of run, waiting for a
// preparation under way (it is further along than a new parse would be)
// unless ctx ends first, or nil when nothing was, or for another state of
// the company.
func (a *parseAhead) take(ctx context.Context, run string, seq int, co company.Company) Prepared {
	k := aheadKey{run, seq}
	a.mu.Lock()
	s, ok := a.slots[k]
	delete(a.slots, k)
	a.mu.Unlock()
	if !ok {
		return nil
	}
	select {
	case <-s.done:
	case <-ctx.Done():
		return nil
	}
	if !reflect.DeepEqual(s.co, co) {
		return nil
	}
	return s.prepared
}
