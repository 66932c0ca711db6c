package imports

import (
	"context"
	"encoding/json"
	"reflect"
	"sync"
	"time"

	"github.com/clientele/clientele/domain/company"
)

// ahead works on a company's next chunk while the current one is in its
// transaction, in two stages, so that the chunks of one company, which
// follow one another, use two cores:
//
//   - parse (start): when chunk n's transaction begins, chunk n+1's
//     records are read and parsed (Preparer). Parsing reads nothing but
//     the records and the company, so the outcome is the same as parsing
//     in the transaction.
//   - resolve (resolve): once chunk n is resolved (Resolver), chunk n+1 is
//     resolved against the committed state with n's decisions laid over
//     it, while n writes and commits. The resolution is used only when n
//     committed (committed) and nothing else ran for the company between
//     them: its chunks apply one at a time, in upload order, and every
//     write it would make is checked where the store can check it (the
//     streams' expected versions, the registry's unique keys), so a stale
//     one fails the chunk's transaction, which is then retried from the
//     start, resolving in it.
//
// Each stage's work is used only if the chunk is the one worked on and
// its company is unchanged.
type ahead struct {
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
// prepared is set (nil if the chunk could not be read). resolved, when
// not nil, is closed when resolution is set (nil if it failed).
type aheadSlot struct {
	co       company.Company
	started  time.Time
	done     chan struct{}
	first    int
	records  []json.RawMessage
	prepared Prepared

	resolved   chan struct{}
	resolution Resolution
	// committed is set when the chunk before, which resolution was
	// resolved after, committed.
	committed bool
}

// maxAhead bounds the chunks prepared and not yet applied (one per company
// applying side by side, in practice): each holds a chunk's records.
const maxAhead = 4

// aheadTimeout bounds the read of a chunk to prepare.
const aheadTimeout = time.Minute

func newAhead(store *Store) *ahead {
	return &ahead{store: store, slots: map[aheadKey]*aheadSlot{}}
}

// start prepares chunk seq of run with p for co in the background, unless
// it is being prepared already or too many are. Preparations nobody took
// within aheadTimeout (the chunk did not exist, another process applied
// it) are dropped. It returns a channel closed when the preparation it
// started ends (its slot filled, or dropped), or nil when it started none.
func (a *ahead) start(p Preparer, run string, seq int, co company.Company) <-chan struct{} {
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
		records, first, ok, err := a.store.PeekChunk(ctx, run, seq)
		if err != nil || !ok {
			// No such chunk (the run's last was applied) or no reading it:
			// the chunk's transaction parses it, if there is one.
			a.drop(k, s)
			return
		}
		s.records, s.first = records, first
		s.prepared = p.Prepare(co, records)
	}()
	return s.done
}

// resolve resolves chunk seq of run with r, once it is prepared, after
// prev, the resolution of the chunk before (seq-1), whose transaction is
// under way; mayDestroy is the run's. Nothing happens unless the chunk is
// being prepared for co.
func (a *ahead) resolve(r Resolver, run string, seq int, co company.Company, mayDestroy bool, prev Resolution) {
	a.mu.Lock()
	s, ok := a.slots[aheadKey{run, seq}]
	if !ok || s.resolved != nil || !reflect.DeepEqual(s.co, co) {
		a.mu.Unlock()
		return
	}
	s.resolved = make(chan struct{})
	a.mu.Unlock()
	go func() {
		defer close(s.resolved)
		<-s.done
		if s.prepared == nil {
			return
		}
		defer func() {
			if recover() != nil {
				// The chunk's transaction resolves it again, where a panic
				// is the handler's to recover (and report).
				s.resolution = nil
			}
		}()
		ctx, cancel := context.WithTimeout(context.Background(), aheadTimeout)
		defer cancel()
		chunk := Chunk{Company: co, RunID: run, Seq: seq, FirstIndex: s.first, Records: s.records, Prepared: s.prepared, MayDestroy: mayDestroy}
		res, err := r.Resolve(ctx, a.store.pool, chunk, prev)
		if err == nil {
			s.resolution = res
		}
	}()
}

// settled records whether the transaction of chunk seq-1 of run, after
// which chunk seq was resolved, committed: only then is the resolution of
// chunk seq of use. When it did not, the slot is dropped, resolution and
// all: the chunk before is tried again, resolved again, and chunk seq
// prepared and resolved after that, anew.
func (a *ahead) settled(run string, seq int, committed bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	k := aheadKey{run, seq}
	s, ok := a.slots[k]
	switch {
	case !ok || s.resolved == nil:
	case committed:
		s.committed = true
	default:
		delete(a.slots, k)
	}
}

// drop forgets slot s of chunk k, unless another took its place.
func (a *ahead) drop(k aheadKey, s *aheadSlot) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.slots[k] == s {
		delete(a.slots, k)
	}
}

// take returns what was prepared, or else resolved, for c, waiting for
// work under way (it is further along than new work would be) unless ctx
// ends first. It returns nil for what was not done, or was done for
// another state of the company or other records. A resolution, when
// there is one of use (the chunk before it committed), comes without the
// prepared records: resolving changes them (a customer's changes lose the
// identities another holds), so a chunk resolved again, in isolation,
// parses its records again. When a resolution was started but is of no
// use, its end is awaited, for the same reason, and nothing is returned.
func (a *ahead) take(ctx context.Context, c stagedChunk, co company.Company) (Prepared, Resolution) {
	k := aheadKey{c.RunID, c.Seq}
	a.mu.Lock()
	s, ok := a.slots[k]
	delete(a.slots, k)
	a.mu.Unlock()
	if !ok {
		return nil, nil
	}
	select {
	case <-s.done:
	case <-ctx.Done():
		return nil, nil
	}
	same := reflect.DeepEqual(s.co, co) && s.first == c.FirstIndex && len(s.records) == len(c.Records)
	a.mu.Lock()
	resolved, committed := s.resolved, s.committed
	a.mu.Unlock()
	switch {
	case resolved == nil && same:
		return s.prepared, nil
	case resolved == nil:
		return nil, nil
	}
	select {
	case <-resolved:
	case <-ctx.Done():
		return nil, nil
	}
	if !committed || !same {
		return nil, nil
	}
	return nil, s.resolution
}
