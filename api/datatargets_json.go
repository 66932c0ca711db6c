package api

import (
	"github.com/clientele/clientele/domain/access"
	"github.com/clientele/clientele/domain/datatarget"
)

// datatargetJSON is a datatarget as answered.
type datatargetJSON struct {
	ID                string       `json:"id"`
	DatatargetType    string       `json:"datatarget_type"`
	Name              string       `json:"name"`
	Description       string       `json:"description"`
	CreatedAt         string       `json:"created_at"`
	Enabled           bool         `json:"enabled"`
	Outlets           []outletJSON `json:"outlets"`
	LastMessageNumber int64        `json:"last_message_number"`
	// MessageRetentionDays is the datatarget's own retention of delivered
	// messages; null: the server's default.
	MessageRetentionDays *int `json:"message_retention_days"`
	// Datasync datatargets only; fields null means every field.
	Datatype  *datatarget.Datatype `json:"datatype,omitempty"`
	Fields    *[]string            `json:"fields,omitempty"`
	FromStart *bool                `json:"from_start,omitempty"`
	// SegmentKey: datasync datatargets of datatype segment only.
	SegmentKey string `json:"segment_key,omitempty"`
}

// newDatatargetJSON answers d to p, its outlets' credentials as p may see
// them (newOutletJSON).
func newDatatargetJSON(d datatarget.Datatarget, p access.Principal) datatargetJSON {
	out := datatargetJSON{
		ID: d.ID, DatatargetType: string(d.Type), Name: d.Name, Description: d.Description,
		CreatedAt: timestamp(d.CreatedAt), Enabled: d.Enabled, Outlets: make([]outletJSON, 0, len(d.Outlets)),
		LastMessageNumber: d.LastMessageNumber, MessageRetentionDays: d.MessageRetentionDays,
	}
	if d.Type == datatarget.Datasync {
		s := d.Settings
		out.Datatype, out.Fields, out.FromStart = &s.Datatype, &s.Fields, &s.FromStart
		out.SegmentKey = s.SegmentKey
	}
	for _, o := range d.Outlets {
		out.Outlets = append(out.Outlets, newOutletJSON(o, p))
	}
	return out
}
