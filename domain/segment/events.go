package segment

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/clientele/clientele/domain"
)

// Stream is a segment's stream, "segment-<company>-<key>": named after
// its key, which never changes, so appending the creation with "no
// stream yet" makes keys unique in the company.
func Stream(companyID, key string) string { return domain.StreamID("segment", companyID, key) }

// KeysStream is the stream of a company's generated keys: one
// KeyGenerated per generated key, its version ordering the generations.
func KeysStream(companyID string) string {
	return domain.StreamID("segmentkeys", companyID, companyID)
}

// Event type names, as stored in the log. They are durable: never rename
// one. Every event of a segment's stream carries its segment_key.
const (
	CreatedType   = "SegmentCreated"
	ChangedType   = "SegmentChanged"
	ArchivedType  = "SegmentArchived"
	ActivatedType = "SegmentActivated"
	// KeyGeneratedType is on the keys stream, not the segment's.
	KeyGeneratedType = "SegmentKeyGenerated"
)

// EventTypes lists the types of a segment's stream.
var EventTypes = []string{CreatedType, ChangedType, ArchivedType, ActivatedType}

// Event is an event of a segment's stream.
type Event interface {
	// EventType is the event's type name in the log.
	EventType() string
	// SegmentKey is the key of the segment the event is about.
	SegmentKey() string
	apply(s Segment) Segment
}

// Created starts a segment's stream; the segment is active.
type Created struct {
	Key         string          `json:"segment_key"`
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Rule        json.RawMessage `json:"rule"`
	CreatedAt   time.Time       `json:"created_at"`
	CreatedBy   string          `json:"created_by"`
}

// Changed records a segment's new name, description and rule, all of
// them whatever changed.
type Changed struct {
	Key         string          `json:"segment_key"`
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Rule        json.RawMessage `json:"rule"`
	UpdatedAt   time.Time       `json:"updated_at"`
}

// Archived retires a segment: its members leave.
type Archived struct {
	Key       string    `json:"segment_key"`
	UpdatedAt time.Time `json:"updated_at"`
}

// Activated makes an archived segment active again: its members are
// computed anew.
type Activated struct {
	Key       string    `json:"segment_key"`
	UpdatedAt time.Time `json:"updated_at"`
}

// KeyGenerated records that the company's Number-th generated key went
// to the segment Key.
type KeyGenerated struct {
	Number int64  `json:"number"`
	Key    string `json:"segment_key"`
}

// EventType implements Event.
func (Created) EventType() string { return CreatedType }

// EventType implements Event.
func (Changed) EventType() string { return ChangedType }

// EventType implements Event.
func (Archived) EventType() string { return ArchivedType }

// EventType implements Event.
func (Activated) EventType() string { return ActivatedType }

// SegmentKey implements Event.
func (e Created) SegmentKey() string { return e.Key }

// SegmentKey implements Event.
func (e Changed) SegmentKey() string { return e.Key }

// SegmentKey implements Event.
func (e Archived) SegmentKey() string { return e.Key }

// SegmentKey implements Event.
func (e Activated) SegmentKey() string { return e.Key }

func (e Created) apply(s Segment) Segment {
	return Segment{CompanyID: s.CompanyID, Key: e.Key, Name: e.Name, Description: e.Description, Rule: e.Rule,
		State: StateActive, CreatedAt: e.CreatedAt, UpdatedAt: e.CreatedAt, CreatedBy: e.CreatedBy}
}

func (e Changed) apply(s Segment) Segment {
	s.Name, s.Description, s.Rule, s.UpdatedAt = e.Name, e.Description, e.Rule, e.UpdatedAt
	return s
}

func (e Archived) apply(s Segment) Segment {
	s.State, s.UpdatedAt = StateArchived, e.UpdatedAt
	return s
}

func (e Activated) apply(s Segment) Segment {
	s.State, s.UpdatedAt = StateActive, e.UpdatedAt
	return s
}

// Apply returns s as e leaves it: a segment is the fold of its stream
// from the zero Segment (with its CompanyID set).
func (s Segment) Apply(e Event) Segment { return e.apply(s) }

// Decode decodes an event of a segment's stream. Events of other types
// decode to nil without error.
func Decode(typ string, data []byte) (Event, error) {
	var (
		e   Event
		err error
	)
	switch typ {
	case CreatedType:
		e, err = decodeAs[Created](data)
	case ChangedType:
		e, err = decodeAs[Changed](data)
	case ArchivedType:
		e, err = decodeAs[Archived](data)
	case ActivatedType:
		e, err = decodeAs[Activated](data)
	default:
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("segment: decode %s: %w", typ, err)
	}
	return e, nil
}

func decodeAs[T Event](data []byte) (Event, error) {
	var v T
	err := json.Unmarshal(data, &v)
	return v, err
}
