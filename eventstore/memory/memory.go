// Package memory is an in-memory event store adapter for unit tests. It
// keeps the whole log in a slice behind one mutex, so commits are trivially
// atomic and visible in the order they were written; it passes the same
// contract suite (eventstore/storetest) as the PostgreSQL adapter.
package memory

import (
	"context"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/clientele/clientele/eventstore"
)

// Store is an in-memory eventstore.Store. The zero value is an empty store
// ready to use.
type Store struct {
	// Now is the clock stamped on recorded events; nil means time.Now. Set
	// it before the store is used.
	Now func() time.Time

	mu       sync.Mutex
	log      []eventstore.RecordedEvent
	versions map[string]int64
	lastTx   uint64
}

var _ eventstore.Store = (*Store)(nil)

// New returns an empty store.
func New() *Store { return &Store{Now: time.Now} }

// Append writes the commit atomically. TxID is the commit's sequence number,
// starting at 1; global positions count events from 1.
func (s *Store) Append(ctx context.Context, c eventstore.Commit) (eventstore.Committed, error) {
	if err := ctx.Err(); err != nil {
		return eventstore.Committed{}, err
	}
	if err := c.Validate(); err != nil {
		return eventstore.Committed{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.versions == nil {
		s.versions = make(map[string]int64)
	}
	// Check every stream before writing anything: all or nothing.
	for _, st := range c.Streams {
		if err := eventstore.CheckVersion(st.StreamID, st.ExpectedVersion, s.versions[st.StreamID]); err != nil {
			return eventstore.Committed{}, err
		}
	}
	// Truncated like the PostgreSQL adapter, so tests compare equal across
	// adapters.
	clock := s.Now
	if clock == nil {
		clock = time.Now
	}
	now := clock().UTC().Truncate(time.Microsecond)
	s.lastTx++
	next := int64(len(s.log)) + 1
	events := make([]eventstore.RecordedEvent, 0, c.Count())
	for _, st := range c.Streams {
		v := s.versions[st.StreamID]
		for _, e := range st.Events {
			v++
			events = append(events, eventstore.RecordedEvent{
				StreamID:      st.StreamID,
				StreamVersion: v,
				Type:          e.Type,
				// Copied: the caller may reuse its buffer.
				Data:       slices.Clone(e.Data),
				Metadata:   c.Metadata,
				RecordedAt: now,
				Position:   eventstore.Position{TxID: s.lastTx, Global: next},
			})
			next++
		}
		s.versions[st.StreamID] = v
	}
	s.log = append(s.log, events...)
	return eventstore.Committed{
		TxID:   s.lastTx,
		First:  events[0].Position,
		Last:   events[len(events)-1].Position,
		Events: cloneEvents(events),
	}, nil
}

// ReadStream returns the events of a stream above afterVersion.
func (s *Store) ReadStream(ctx context.Context, streamID string, afterVersion int64) ([]eventstore.RecordedEvent, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []eventstore.RecordedEvent
	for _, e := range s.log {
		if e.StreamID == streamID && e.StreamVersion > afterVersion {
			out = append(out, e)
		}
	}
	return cloneEvents(out), nil
}

// ReadLog returns whole commits after the position: limit events, more to
// finish the last commit, fewer at the end of the log. A limit of zero or
// less means 1000, as in the PostgreSQL adapter.
func (s *Store) ReadLog(ctx context.Context, after eventstore.Position, limit int) ([]eventstore.RecordedEvent, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	limit = pageSize(limit)
	s.mu.Lock()
	defer s.mu.Unlock()
	i := s.indexAfter(after)
	j := min(i+limit, len(s.log))
	for j > i && j < len(s.log) && s.log[j].Position.TxID == s.log[j-1].Position.TxID {
		j++
	}
	return cloneEvents(s.log[i:j]), nil
}

// ReadCommit returns the events of commit txID; none when there is no
// such commit.
func (s *Store) ReadCommit(ctx context.Context, txID uint64) ([]eventstore.RecordedEvent, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return cloneEvents(s.commit(txID)), nil
}

// ReadCommitTypes returns the events of commit txID of the given types,
// and the span of the whole commit.
func (s *Store) ReadCommitTypes(ctx context.Context, txID uint64, types []string) ([]eventstore.RecordedEvent, eventstore.CommitSpan, error) {
	if err := ctx.Err(); err != nil {
		return nil, eventstore.CommitSpan{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.commit(txID)
	if len(c) == 0 {
		return nil, eventstore.CommitSpan{}, nil
	}
	var out []eventstore.RecordedEvent
	for _, e := range c {
		if slices.Contains(types, e.Type) {
			out = append(out, e)
		}
	}
	return cloneEvents(out), eventstore.CommitSpan{Count: len(c), First: c[0].Position.Global, Last: c[len(c)-1].Position.Global}, nil
}

// pageSize is a read's limit: a limit of zero or less means 1000, as in
// the PostgreSQL adapter.
func pageSize(limit int) int {
	if limit <= 0 {
		return 1000
	}
	return limit
}

// indexAfter is the index of the first event of the log after position
// p. Call it with mu held.
func (s *Store) indexAfter(p eventstore.Position) int {
	return sort.Search(len(s.log), func(i int) bool { return p.Less(s.log[i].Position) })
}

// commit returns the events of commit txID in the log. Call it with mu
// held.
func (s *Store) commit(txID uint64) []eventstore.RecordedEvent {
	i := sort.Search(len(s.log), func(i int) bool { return s.log[i].Position.TxID >= txID })
	j := i
	for j < len(s.log) && s.log[j].Position.TxID == txID {
		j++
	}
	return s.log[i:j]
}

// ReadCompanyLog returns the events of one company's commits after the
// position after up to and including upTo: whole commits, limit events,
// more to finish the last commit (eventstore.CommitReader).
func (s *Store) ReadCompanyLog(ctx context.Context, companyID string, after, upTo eventstore.Position, limit int) ([]eventstore.RecordedEvent, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	limit = pageSize(limit)
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []eventstore.RecordedEvent
	for _, e := range s.log[s.indexAfter(after):] {
		if upTo.Less(e.Position) || (len(out) >= limit && e.Position.TxID != out[len(out)-1].Position.TxID) {
			break
		}
		if e.Metadata.CompanyID == companyID {
			out = append(out, e)
		}
	}
	return cloneEvents(out), nil
}

// EachCompanyEvent calls fn with each event of one company's commits
// after the position after up to and including upTo
// (eventstore.CommitReader). The log only grows, so the events of the
// range are taken under the lock and handed out without it: fn may use
// the store.
func (s *Store) EachCompanyEvent(ctx context.Context, companyID string, after, upTo eventstore.Position, fn func(eventstore.RecordedEvent) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	log := s.log[s.indexAfter(after):]
	s.mu.Unlock()
	for _, e := range log {
		if upTo.Less(e.Position) {
			break
		}
		if e.Metadata.CompanyID != companyID {
			continue
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		e.Data = slices.Clone(e.Data)
		if err := fn(e); err != nil {
			return err
		}
	}
	return nil
}

// Head returns the position of the last event, or the zero position.
func (s *Store) Head(ctx context.Context) (eventstore.Position, error) {
	if err := ctx.Err(); err != nil {
		return eventstore.Position{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.log) == 0 {
		return eventstore.Position{}, nil
	}
	return s.log[len(s.log)-1].Position, nil
}

// cloneEvents copies events and their data, so that callers cannot alter
// the log through what they were given.
func cloneEvents(evs []eventstore.RecordedEvent) []eventstore.RecordedEvent {
	if len(evs) == 0 {
		return nil
	}
	out := slices.Clone(evs)
	for i := range out {
		out[i].Data = slices.Clone(out[i].Data)
	}
	return out
}
