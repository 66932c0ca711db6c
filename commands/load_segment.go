package commands

import (
	"context"

	"github.com/clientele/clientele/domain"
	"github.com/clientele/clientele/domain/segment"
	"github.com/clientele/clientele/eventstore"
)

func errNoSegment() error { return domain.Errorf(domain.NotFound, "no such segment") }

// loadSegment folds a segment's stream into its current state and
// version. An unknown segment (or a key no segment can have) is NotFound.
func loadSegment(ctx context.Context, store eventstore.Store, companyID, key string) (segment.Segment, int64, error) {
	s := segment.Segment{CompanyID: companyID}
	if !segment.ValidKey(key) {
		return s, 0, errNoSegment()
	}
	return foldStream(ctx, store, segment.Stream(companyID, key), s, applySegment, errNoSegment)
}

// applySegment is a segment after one more event of its stream.
func applySegment(s segment.Segment, e eventstore.RecordedEvent) (segment.Segment, error) {
	ev, err := segment.Decode(e.Type, e.Data)
	if err != nil || ev == nil {
		return s, err
	}
	return s.Apply(ev), nil
}

// segmentRules finds the company's segments by key from their streams,
// for the check of a rule's segment leaves (unknown segments, cycles):
// the streams are the truth a concurrent change appends to.
func segmentRules(ctx context.Context, store eventstore.Store, companyID string) segment.Rules {
	return func(key string) (segment.Rule, bool, error) {
		s, _, err := loadSegment(ctx, store, companyID, key)
		if err != nil && domain.ErrorCode(err) == domain.NotFound {
			return segment.Rule{}, false, nil
		}
		if err != nil {
			return segment.Rule{}, false, err
		}
		r, err := s.ParsedRule()
		return r, err == nil, err
	}
}

// segmentEvents encodes a decision's events for the store.
func segmentEvents(evs []segment.Event) []eventstore.Event {
	out := make([]eventstore.Event, len(evs))
	for i, e := range evs {
		out[i] = eventstore.NewEvent(e.EventType(), e)
	}
	return out
}
