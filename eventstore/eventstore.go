// Package eventstore declares the event store ports: Store, an append-only
// log of immutable domain events, grouped in streams (one per aggregate
// instance) and written in atomic multi-stream commits with optimistic
// concurrency; and TxStore (tx.go), the store the write side runs in, whose
// commits join a transaction of write-side state.
//
// Adapters live in subpackages: postgres (the default), memory (unit tests)
// and esdb (EventStoreDB). Every adapter passes the contract suite in
// eventstore/storetest and returns this package's errors (a
// *ConflictError, ErrInvalidCommit, ErrUnavailable, ErrTxHasCommit).
package eventstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Expected versions with a special meaning. Any other non-negative value is
// the exact version the stream must have (0 is the same as NoStream).
const (
	// Any skips the concurrency check for the stream.
	Any int64 = -1
	// NoStream requires that the stream does not exist yet.
	NoStream int64 = 0
	// StreamExists requires that the stream has at least one event.
	StreamExists int64 = -2
)

// Metadata describes who caused an event and why. It is stored with every
// event and never changes.
type Metadata struct {
	// CompanyID is the tenant the event belongs to. Required.
	CompanyID string `json:"company_id"`
	// RunID is the import run or request that produced the event.
	RunID string `json:"run_id,omitempty"`
	// Actor is who acted: "users/<id>", "integrations/<id>", "tokens/<id>" or "system".
	Actor string `json:"actor,omitempty"`
	// Source is the channel: api, csv, sftp, cli, system.
	Source string `json:"source,omitempty"`
	// CorrelationID groups every event caused by one original request.
	CorrelationID string `json:"correlation_id,omitempty"`
	// CausationID is the id of the message or event that caused this one.
	CausationID string `json:"causation_id,omitempty"`
}

// Event is a new event to append.
type Event struct {
	// Type names the domain event, e.g. "AccessTokenCreated".
	Type string
	// Data is the JSON encoding of the event.
	Data json.RawMessage
}

// NewEvent encodes a domain event: data, a plain struct, as JSON. It
// panics if data does not encode, a programming error.
func NewEvent(typ string, data any) Event {
	b, err := json.Marshal(data)
	if err != nil {
		panic(fmt.Sprintf("eventstore: encode %s: %v", typ, err))
	}
	return Event{Type: typ, Data: b}
}

// StreamAppend is the part of a commit that goes to one stream.
type StreamAppend struct {
	// StreamID names the stream; each aggregate package names its own
	// (customer.Stream, sale.Stream, ...).
	StreamID string
	// ExpectedVersion is the version the stream must have before the append:
	// Any, NoStream, StreamExists or an exact version.
	ExpectedVersion int64
	// Events are appended in order, with versions ExpectedVersion+1, ...
	Events []Event
}

// Commit is one atomic write: events for one or more streams, all or nothing.
type Commit struct {
	Metadata Metadata
	Streams  []StreamAppend
}

// Position orders the log. Commits are ordered by the transaction that wrote
// them, then by global position; see the postgres adapter for why.
type Position struct {
	// TxID is the id of the committing transaction (a commit sequence number
	// in adapters without transactions).
	TxID uint64 `json:"tx_id"`
	// Global is the event's global position, unique across the log.
	Global int64 `json:"global"`
}

// Less reports whether p comes before q in the log.
func (p Position) Less(q Position) bool {
	if p.TxID != q.TxID {
		return p.TxID < q.TxID
	}
	return p.Global < q.Global
}

// IsZero reports whether p is the start of the log.
func (p Position) IsZero() bool { return p == Position{} }

// String formats p as "tx:global".
func (p Position) String() string { return fmt.Sprintf("%d:%d", p.TxID, p.Global) }

// RecordedEvent is an event as stored.
type RecordedEvent struct {
	StreamID      string
	StreamVersion int64
	Type          string
	Data          json.RawMessage
	Metadata      Metadata
	RecordedAt    time.Time
	Position      Position
}

// Committed describes a successful append.
type Committed struct {
	// TxID identifies the commit; every event of the commit shares it.
	TxID uint64
	// First and Last are the positions of the first and last event.
	First, Last Position
	// Events are the appended events as recorded.
	Events []RecordedEvent
}

// Store is the event store port.
type Store interface {
	// Append writes the commit atomically. A stream whose version differs
	// from its expected version makes the whole commit fail with a
	// *ConflictError and nothing is written.
	Append(ctx context.Context, c Commit) (Committed, error)
	// ReadStream returns the events of a stream with a version above
	// afterVersion, in version order. A stream that does not exist has no
	// events.
	ReadStream(ctx context.Context, streamID string, afterVersion int64) ([]RecordedEvent, error)
	// ReadLog returns up to limit events after the given position, in log
	// order, whole commits only (a commit is never split across two pages,
	// so a page may exceed limit to finish a commit). It never returns an
	// event while an earlier one may still appear: a reader that resumes
	// from the last position it saw never skips an event.
	ReadLog(ctx context.Context, after Position, limit int) ([]RecordedEvent, error)
	// Head returns the position of the last event visible to ReadLog.
	Head(ctx context.Context) (Position, error)
	CommitReader
}

// CommitReader reads the log commit by commit: a commit announced by its
// TxID (a consumer given a commit's header reads its events from the
// store), and one company's commits, for a reader that follows one
// company behind the others (a projector retrying a company it parked).
type CommitReader interface {
	// ReadCommit returns the events of the commit txID, in log order. A
	// commit that does not exist (or is not committed yet) has no events
	// and is no error.
	ReadCommit(ctx context.Context, txID uint64) ([]RecordedEvent, error)
	// ReadCommitTypes returns the events of the commit txID whose type is
	// one of types, in log order, and the span of the whole commit (all
	// its events, of any type), so that a reader that skips types can
	// still check the commit against what was announced. A commit that
	// does not exist has no events, a zero span and is no error.
	ReadCommitTypes(ctx context.Context, txID uint64, types []string) ([]RecordedEvent, CommitSpan, error)
	// ReadCompanyLog returns the events of one company's commits
	// (Metadata.CompanyID) that come after the position after and not
	// after upTo, in log order, as far as ReadLog sees the log: at least
	// limit events unless the range ends first, and then the rest of the
	// last event's commit (a page may exceed limit to end with a whole
	// commit, as ReadLog's); a limit of zero or less means 1000. No event
	// is ever after upTo: upTo should end a commit (a checkpoint does), or
	// the commit it falls in is cut there. A range that is empty (after is
	// not before upTo) has no events.
	//
	// Adapters need not index the log by company: it may cost a walk of
	// every company's commits in the range, up to the page's last.
	ReadCompanyLog(ctx context.Context, companyID string, after, upTo Position, limit int) ([]RecordedEvent, error)
	// EachCompanyEvent calls fn with each event of ReadCompanyLog's range
	// (one company's commits after the position after and not after
	// upTo, in log order, upTo cutting the commit it falls in), all of
	// them, read as one stream: memory holds what the adapter reads
	// ahead (a batch of rows or a commit), whatever the range's size. An
	// error of fn stops the read, and EachCompanyEvent returns it as it
	// is; stopping early costs at most the rest of what the adapter read
	// ahead, not the rest of the range. fn may keep the events it is
	// given.
	//
	// The read may hold a connection of the store for as long as it
	// runs, fn's time included.
	EachCompanyEvent(ctx context.Context, companyID string, after, upTo Position, fn func(RecordedEvent) error) error
}

// CommitSpan describes a whole commit: its number of events and the global
// positions of its first and last.
type CommitSpan struct {
	Count       int
	First, Last int64
}

// ConflictError reports that a stream's version was not the expected one.
type ConflictError struct {
	StreamID string
	Expected int64
	Actual   int64
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("eventstore: stream %q is at version %d, expected %s", e.StreamID, e.Actual, expectedString(e.Expected))
}

func expectedString(v int64) string {
	switch v {
	case Any:
		return "any"
	case StreamExists:
		return "an existing stream"
	case NoStream:
		return "no stream"
	}
	return fmt.Sprint(v)
}

// ErrUnavailable marks an error of an adapter whose server cannot be
// reached or cannot answer now: the same request may succeed later (an
// outage, a leader change). Every adapter with a server returns it,
// wrapping the server's own error. It reports itself transient (a method
// Transient() bool), so that a classifier of failures that knows no event
// store (internal/pg's Transient) reads it as it reads an outage of
// PostgreSQL.
var ErrUnavailable error = unavailableError{}

// unavailableError is the type of ErrUnavailable.
type unavailableError struct{}

func (unavailableError) Error() string { return "eventstore: the event store is unavailable" }

// Transient reports that the failure may pass: the same work is retried
// as it is.
func (unavailableError) Transient() bool { return true }

// ErrInvalidCommit reports a commit that can never be written (no streams,
// an empty stream id, an event without type, a stream twice in one commit,
// no company).
var ErrInvalidCommit = errors.New("eventstore: invalid commit")

// Validate checks the shape of a commit; adapters call it before writing.
func (c Commit) Validate() error {
	if c.Metadata.CompanyID == "" {
		return fmt.Errorf("%w: no company", ErrInvalidCommit)
	}
	if len(c.Streams) == 0 {
		return fmt.Errorf("%w: no streams", ErrInvalidCommit)
	}
	seen := make(map[string]bool, len(c.Streams))
	for _, s := range c.Streams {
		if s.StreamID == "" {
			return fmt.Errorf("%w: empty stream id", ErrInvalidCommit)
		}
		if seen[s.StreamID] {
			return fmt.Errorf("%w: stream %q twice", ErrInvalidCommit, s.StreamID)
		}
		seen[s.StreamID] = true
		if len(s.Events) == 0 {
			return fmt.Errorf("%w: stream %q has no events", ErrInvalidCommit, s.StreamID)
		}
		if s.ExpectedVersion < StreamExists {
			return fmt.Errorf("%w: stream %q: bad expected version %d", ErrInvalidCommit, s.StreamID, s.ExpectedVersion)
		}
		for _, e := range s.Events {
			if e.Type == "" {
				return fmt.Errorf("%w: stream %q: event without type", ErrInvalidCommit, s.StreamID)
			}
			if !json.Valid(e.Data) {
				return fmt.Errorf("%w: stream %q: event %s: data is not JSON", ErrInvalidCommit, s.StreamID, e.Type)
			}
		}
	}
	return nil
}

// CheckVersion applies the expected-version rule to a stream at version
// actual (0 when it does not exist).
func CheckVersion(streamID string, expected, actual int64) error {
	ok := false
	switch expected {
	case Any:
		ok = true
	case StreamExists:
		ok = actual > 0
	default:
		ok = actual == expected
	}
	if !ok {
		return &ConflictError{StreamID: streamID, Expected: expected, Actual: actual}
	}
	return nil
}

// Count returns the number of events in the commit.
func (c Commit) Count() int {
	n := 0
	for _, s := range c.Streams {
		n += len(s.Events)
	}
	return n
}
