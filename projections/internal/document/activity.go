package document

import (
	"slices"
	"time"

	"github.com/clientele/clientele/domain/activity"
	"github.com/clientele/clientele/eventstore"
)

// ActivityKey identifies an event (the interface's Event entity) across
// companies.
type ActivityKey struct {
	Company string
	ID      int64
}

// ActivityRow is a row of activity_events while events are applied to it.
type ActivityRow struct {
	CompanyID  string
	ID         int64
	CustomerID string
	Doc        map[string]any
	IsDeleted  bool
	Version    int64
	CreatedAt  time.Time
	UpdatedAt  time.Time
	Changed    bool
}

// Advance reports whether e (of the company's activity stream) is new to
// the row, and marks the row changed: an event the row reflects already
// is skipped, so applying a commit twice changes nothing.
func (r *ActivityRow) Advance(e *eventstore.RecordedEvent) bool {
	if e.StreamVersion <= r.Version {
		return false
	}
	r.Version, r.UpdatedAt, r.Changed = e.StreamVersion, e.RecordedAt.UTC(), true
	return true
}

// Fields of a retrieved event that the projector owns: an event's Fields
// never set them.
var ownedEventFields = []string{"id", "type", "date", "is_deleted"}

// EventDoc is an event as retrieval shows it: its Fields, the personal
// fields opened from its sealed part (nil when it has none or the
// customer is forgotten), and id, type, date and is_deleted. Personal
// fields come from the sealed part only: a Personal name among the clear
// Fields is dropped, so that forgetting (which removes those names)
// leaves nothing, live or rebuilt.
func EventDoc(rec activity.Recorded, personal map[string]any, deleted bool) map[string]any {
	doc := make(map[string]any, len(rec.Fields)+len(personal)+len(ownedEventFields))
	for k, v := range rec.Fields {
		if v != nil && !slices.Contains(activity.Personal, k) {
			doc[k] = v
		}
	}
	for k, v := range personal {
		if v != nil && v != "" {
			doc[k] = v
		}
	}
	doc["id"], doc["type"], doc["date"], doc["is_deleted"] = rec.ID, rec.Type, UtcDatetime(rec.Date), deleted
	return doc
}
