package esdb

import (
	"fmt"

	"github.com/clientele/clientele/eventstore"
)

// index is what the adapter derives from the commit stream's records:
// every stream's version and the records that touch it, and where the
// next record and event go.
type index struct {
	// next is the revision of the next record (the number of records).
	next uint64
	// nextGlobal is the global position of the next event.
	nextGlobal int64
	// head is the position of the last event.
	head    eventstore.Position
	streams map[string]streamIndex
}

type streamIndex struct {
	version int64
	commits []commitRef
}

// commitRef names a record of a stream: its revision and the stream's
// version after it.
type commitRef struct {
	rev  uint64
	last int64
}

// apply adds the record of revision rev. A record the index has already
// seen is ignored (an append and a catch-up may both bring it); one that
// does not follow the index (a gap, or versions or positions that do not
// continue the log) is an error: the commit stream was written by
// something other than the adapter.
func (x *index) apply(rev uint64, r *record) error {
	if rev < x.next {
		return nil
	}
	if rev > x.next {
		return fmt.Errorf("esdb: commit record %d follows record %d", rev, int64(x.next)-1)
	}
	if r.Void != "" && len(r.Streams) == 0 {
		x.next = rev + 1 // a revision taken, no commit
		return nil
	}
	if r.FirstGlobal != x.nextGlobal {
		return fmt.Errorf("esdb: commit record %d starts at global position %d, want %d", rev, r.FirstGlobal, x.nextGlobal)
	}
	n := 0
	for _, sp := range r.Streams {
		if v := x.streams[sp.ID].version; sp.From != v || sp.N <= 0 {
			return fmt.Errorf("esdb: commit record %d appends %d events to stream %q at version %d, which is at %d", rev, sp.N, sp.ID, sp.From, v)
		}
		n += sp.N
	}
	if n == 0 {
		return fmt.Errorf("esdb: commit record %d has no events", rev)
	}
	for _, sp := range r.Streams {
		si := x.streams[sp.ID]
		si.version += int64(sp.N)
		si.commits = append(si.commits, commitRef{rev: rev, last: si.version})
		x.streams[sp.ID] = si
	}
	x.next = rev + 1
	x.nextGlobal += int64(n)
	x.head = eventstore.Position{TxID: rev + 1, Global: r.FirstGlobal + int64(n) - 1}
	return nil
}
