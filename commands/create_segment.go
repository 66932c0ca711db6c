package commands

import (
	"context"
	"fmt"
	"time"

	"github.com/clientele/clientele/domain"
	"github.com/clientele/clientele/domain/access"
	"github.com/clientele/clientele/domain/segment"
	"github.com/clientele/clientele/eventstore"
)

// CreateSegment creates a segment in the principal's company; it needs
// the staff role. Without a segment_key, one is generated: SE-<n>.
type CreateSegment struct {
	Principal access.Principal
	Input     segment.Input
}

// CreateSegmentHandler handles CreateSegment.
type CreateSegmentHandler struct {
	store eventstore.Store
	now   func() time.Time
	keys  *keyCounters
}

// NewCreateSegmentHandler returns a handler on store.
func NewCreateSegmentHandler(store eventstore.Store, now func() time.Time) CreateSegmentHandler {
	if store == nil || now == nil {
		panic("commands: NewCreateSegmentHandler: nil dependency")
	}
	return CreateSegmentHandler{store: store, now: now, keys: &keyCounters{stream: segment.KeysStream}}
}

// Handle creates the segment and returns it. A key already taken is 409,
// a bad rule 422 naming the path of the bad part.
func (h CreateSegmentHandler) Handle(ctx context.Context, cmd CreateSegment) (segment.Segment, error) {
	p := cmd.Principal
	if err := RequireCompany(p); err != nil {
		return segment.Segment{}, err
	}
	if err := segment.MayManage(p); err != nil {
		return segment.Segment{}, err
	}
	if err := checkSystemCompany(ctx, h.store, p); err != nil {
		return segment.Segment{}, err
	}
	if key, ok := cmd.Input.GivenKey(); ok {
		return h.create(ctx, cmd, key)
	}
	for attempt := 1; ; attempt++ {
		s, err := h.generate(ctx, cmd)
		if conflictOn(err, segment.KeysStream(p.CompanyID)) || conflictOn(err, segment.Stream(p.CompanyID, s.Key)) {
			if attempt < generateAttempts {
				continue
			}
			return segment.Segment{}, appendError(err)
		}
		return s, err
	}
}

// create creates the segment under the key the client gave.
func (h CreateSegmentHandler) create(ctx context.Context, cmd CreateSegment, key string) (segment.Segment, error) {
	p := cmd.Principal
	s, events, err := segment.New(p, key, cmd.Input, stamp(h.now()), segmentRules(ctx, h.store, p.CompanyID))
	if err != nil {
		return segment.Segment{}, err
	}
	stream := segment.Stream(p.CompanyID, key)
	_, err = h.store.Append(ctx, eventstore.Commit{
		Metadata: Metadata(ctx, p, p.CompanyID),
		Streams:  []eventstore.StreamAppend{{StreamID: stream, ExpectedVersion: eventstore.NoStream, Events: segmentEvents(events)}},
	})
	switch {
	case err == nil:
		return s, nil
	case conflictOn(err, stream):
		return segment.Segment{}, &domain.Error{Code: domain.Conflict, Message: fmt.Sprintf("a segment with segment_key %s already exists", key),
			Details: []domain.FieldError{{Field: "segment_key", Reason: "already exists"}}}
	}
	return segment.Segment{}, appendError(err)
}

// generate creates the segment under the company's next free generated
// key, in one commit with the key's generation (as for campaigns: the
// keys stream is expected at the version read).
func (h CreateSegmentHandler) generate(ctx context.Context, cmd CreateSegment) (segment.Segment, error) {
	p := cmd.Principal
	counter, err := h.keys.read(ctx, h.store, p.CompanyID)
	if err != nil {
		return segment.Segment{}, err
	}
	n := counter.number + 1
	for ; ; n++ {
		evs, err := h.store.ReadStream(ctx, segment.Stream(p.CompanyID, segment.GeneratedKey(n)), 0)
		if err != nil {
			return segment.Segment{}, err
		}
		if len(evs) == 0 {
			break
		}
	}
	key := segment.GeneratedKey(n)
	s, events, err := segment.New(p, key, cmd.Input, stamp(h.now()), segmentRules(ctx, h.store, p.CompanyID))
	if err != nil {
		return segment.Segment{}, err
	}
	done, err := h.store.Append(ctx, eventstore.Commit{
		Metadata: Metadata(ctx, p, p.CompanyID),
		Streams: []eventstore.StreamAppend{
			{StreamID: segment.KeysStream(p.CompanyID), ExpectedVersion: counter.version,
				Events: []eventstore.Event{eventstore.NewEvent(segment.KeyGeneratedType, segment.KeyGenerated{Number: n, Key: key})}},
			{StreamID: segment.Stream(p.CompanyID, key), ExpectedVersion: eventstore.NoStream, Events: segmentEvents(events)},
		},
	})
	if err != nil {
		return segment.Segment{Key: key}, err
	}
	h.keys.remember(p.CompanyID, keyCounter{version: done.Events[0].StreamVersion, number: n})
	return s, nil
}
