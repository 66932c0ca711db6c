package esdb

import (
	"encoding/json"
	"time"

	"github.com/clientele/clientele/eventstore"
)

// recordType is the EventStoreDB event type of a commit record.
const recordType = "ClienteleCommit"

// record is a commit as stored: one event of the commit stream. Streams
// lists what the commit appends to each stream, so the stream index is
// built from records alone; the events themselves are inline (Events) or,
// for a large commit, in a parts stream (Parts).
type record struct {
	// FirstGlobal is the global position of the commit's first event; the
	// others follow without gap, in commit order.
	FirstGlobal int64 `json:"first_global"`
	// RecordedAt is the commit's time, in Unix microseconds: stamped by the
	// adapter, because EventStoreDB's append answer has no time, and
	// Append returns the events as they are read back.
	RecordedAt int64               `json:"recorded_at"`
	Metadata   eventstore.Metadata `json:"metadata"`
	Streams    []streamPart        `json:"streams"`
	Events     []eventRecord       `json:"events,omitempty"`
	Parts      *parts              `json:"parts,omitempty"`
	// Void, set, makes the record a void one: no commit, only a revision
	// taken, with no streams and no events, which every reader skips. It
	// is written by the recovery of a commit prepared in PostgreSQL
	// (postgres.go) to fence its revision against the commit's writer,
	// and names that commit's record (its EventStoreDB event id).
	Void string `json:"void,omitempty"`
}

// streamPart is the part of a commit that goes to one stream: N events,
// with versions From+1 ... From+N. The stream's events are the next N of
// the commit, in commit order.
type streamPart struct {
	ID   string `json:"id"`
	From int64  `json:"from"`
	N    int    `json:"n"`
}

type eventRecord struct {
	Type string          `json:"type"`
	Data json.RawMessage `json:"data"`
}

// parts locates the events of a large commit: part i is the event of
// revision i of Stream, a JSON array of the commit's events Firsts[i] up
// to Firsts[i+1] (or the end).
type parts struct {
	Stream string `json:"stream"`
	Firsts []int  `json:"firsts"`
}

// count returns the number of events of the commit.
func (r *record) count() int {
	n := 0
	for _, s := range r.Streams {
		n += s.N
	}
	return n
}

// span returns the commit's span: its events and their global positions.
func (r *record) span() eventstore.CommitSpan {
	n := r.count()
	return eventstore.CommitSpan{Count: n, First: r.FirstGlobal, Last: r.FirstGlobal + int64(n) - 1}
}

// revision returns the revision of the record that holds the event at p
// (TxID is the revision + 1), 0 for the start of the log.
func revision(p eventstore.Position) uint64 {
	if p.TxID == 0 {
		return 0
	}
	return p.TxID - 1
}

// partRange returns the parts that hold the commit's events [from, to).
func (p *parts) partRange(from, to int) (first, last int) {
	first, last = 0, len(p.Firsts)-1
	for i, f := range p.Firsts {
		if f <= from {
			first = i
		}
		if f < to {
			last = i
		}
	}
	return first, last
}

// recorded builds the recorded events of the record at revision rev,
// events[k] being the commit's event offset+k, keeping those keep accepts.
func (r *record) recorded(rev uint64, events []eventRecord, offset int, keep func(streamID string, version int64, pos eventstore.Position) bool) []eventstore.RecordedEvent {
	at := time.UnixMicro(r.RecordedAt).UTC()
	var out []eventstore.RecordedEvent
	i := 0 // index in the commit
	for _, s := range r.Streams {
		for j := range s.N {
			pos := eventstore.Position{TxID: rev + 1, Global: r.FirstGlobal + int64(i)}
			k := i - offset
			i++
			if k < 0 || k >= len(events) || !keep(s.ID, s.From+int64(j)+1, pos) {
				continue
			}
			e := events[k]
			out = append(out, eventstore.RecordedEvent{
				StreamID:      s.ID,
				StreamVersion: s.From + int64(j) + 1,
				Type:          e.Type,
				Data:          e.Data,
				Metadata:      r.Metadata,
				RecordedAt:    at,
				Position:      pos,
			})
		}
	}
	return out
}

func all(string, int64, eventstore.Position) bool { return true }
