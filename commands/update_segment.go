package commands

import (
	"context"
	"time"

	"github.com/clientele/clientele/domain/access"
	"github.com/clientele/clientele/domain/segment"
	"github.com/clientele/clientele/eventstore"
)

// UpdateSegment changes a segment (PATCH): name, description, rule and
// state. It needs the staff role.
type UpdateSegment struct {
	Principal access.Principal
	Key       string
	Input     segment.Input
}

// UpdateSegmentHandler handles UpdateSegment.
type UpdateSegmentHandler struct {
	store eventstore.Store
	now   func() time.Time
}

// NewUpdateSegmentHandler returns a handler on store.
func NewUpdateSegmentHandler(store eventstore.Store, now func() time.Time) UpdateSegmentHandler {
	if store == nil || now == nil {
		panic("commands: NewUpdateSegmentHandler: nil dependency")
	}
	return UpdateSegmentHandler{store: store, now: now}
}

// Handle applies the change and returns the segment as it is afterwards.
// A change that changes nothing appends nothing; a concurrent change of
// the same segment is retried on the segment as it then is.
func (h UpdateSegmentHandler) Handle(ctx context.Context, cmd UpdateSegment) (segment.Segment, error) {
	p := cmd.Principal
	if err := RequireCompany(p); err != nil {
		return segment.Segment{}, err
	}
	if err := segment.MayManage(p); err != nil {
		return segment.Segment{}, err
	}
	stream := segment.Stream(p.CompanyID, cmd.Key)
	for attempt := 1; ; attempt++ {
		s, err := h.try(ctx, cmd, stream)
		if conflictOn(err, stream) && attempt < updateAttempts {
			continue
		}
		if err != nil {
			return segment.Segment{}, appendError(err)
		}
		return s, nil
	}
}

func (h UpdateSegmentHandler) try(ctx context.Context, cmd UpdateSegment, stream string) (segment.Segment, error) {
	p := cmd.Principal
	old, version, err := loadSegment(ctx, h.store, p.CompanyID, cmd.Key)
	if err != nil {
		return old, err
	}
	s, events, err := old.Change(p, cmd.Input, stamp(h.now()), segmentRules(ctx, h.store, p.CompanyID))
	if err != nil || len(events) == 0 {
		return s, err
	}
	_, err = h.store.Append(ctx, eventstore.Commit{
		Metadata: Metadata(ctx, p, p.CompanyID),
		Streams:  []eventstore.StreamAppend{{StreamID: stream, ExpectedVersion: version, Events: segmentEvents(events)}},
	})
	return s, err
}
