// Package segments keeps the read models of segments (docs/segments.md):
// the segments themselves, inline, so that a client reads the segment it
// just created or changed at once.
package segments

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/clientele/clientele/domain/segment"
	"github.com/clientele/clientele/eventstore"
	"github.com/clientele/clientele/projections/internal/bulk"
)

// Segments keeps the segments table: each segment as its stream leaves
// it (segment.Segment.Apply).
type Segments struct{}

// Name implements Projector.
func (Segments) Name() string { return "segments" }

// Tables implements Projector.
func (Segments) Tables() []string { return []string{"segments"} }

// segmentRow is a segments row, the whole segment as the batch's events
// leave it; Created says whether the batch holds its creation.
type segmentRow struct {
	CompanyID   string        `json:"company_id"`
	Key         string        `json:"segment_key"`
	Name        string        `json:"name"`
	Description string        `json:"description"`
	Rule        string        `json:"rule_text"`
	State       segment.State `json:"state"`
	CreatedBy   string        `json:"created_by"`
	CreatedAt   time.Time     `json:"created_at"`
	UpdatedAt   time.Time     `json:"updated_at"`
	Version     int64         `json:"version"`
	SetsAttrs   bool          `json:"sets_attrs"`
	SetsState   bool          `json:"sets_state"`
}

// segmentFold is one segment's events of a batch, folded by the domain
// from its creation when the batch has it, and otherwise from nothing,
// noting which parts the events set.
type segmentFold struct {
	created, attrs, state bool
	s                     segment.Segment
	version               int64
}

// Apply writes the batch's segments in one round trip: the new ones
// whole, then the others (the parts their events set), so that inline, a
// commit at a time, and a rebuild, in pages, write the same row. A row
// already at the batch's version or later is left alone.
func (Segments) Apply(ctx context.Context, tx pgx.Tx, events []eventstore.RecordedEvent) error {
	folds := map[string]*segmentFold{}
	var order []string
	for _, e := range events {
		ev, err := segment.Decode(e.Type, e.Data)
		if err != nil {
			return fmt.Errorf("projections: segments: %s/%d: %w", e.StreamID, e.StreamVersion, err)
		}
		if ev == nil {
			continue
		}
		f := folds[e.StreamID]
		if f == nil {
			f = &segmentFold{s: segment.Segment{CompanyID: e.Metadata.CompanyID, Key: ev.SegmentKey()}}
			folds[e.StreamID] = f
			order = append(order, e.StreamID)
		}
		f.s, f.version = f.s.Apply(ev), e.StreamVersion
		switch e.Type {
		case segment.CreatedType:
			f.created, f.attrs, f.state = true, true, true
		case segment.ChangedType:
			f.attrs = true
		default:
			f.state = true
		}
	}
	var created, changed []segmentRow
	for _, id := range order {
		f := folds[id]
		r := segmentRow{CompanyID: f.s.CompanyID, Key: f.s.Key, Name: f.s.Name, Description: f.s.Description,
			Rule: string(f.s.Rule), State: f.s.State, CreatedBy: f.s.CreatedBy, CreatedAt: f.s.CreatedAt,
			UpdatedAt: f.s.UpdatedAt, Version: f.version, SetsAttrs: f.attrs, SetsState: f.state}
		if f.created {
			created = append(created, r)
		} else {
			changed = append(changed, r)
		}
	}
	var b pgx.Batch
	if err := bulk.QueueRows(&b, "segments", `
		INSERT INTO segments (company_id, segment_key, name, description, rule, rule_text, state, created_by,
			created_at, updated_at, version)
		SELECT company_id, segment_key, name, description, rule_text::jsonb, rule_text, state, created_by,
			created_at, updated_at, version
		FROM jsonb_to_recordset($1::jsonb) AS r(company_id text, segment_key text, name text, description text,
			rule_text text, state text, created_by text, created_at timestamptz, updated_at timestamptz, version bigint)
		ON CONFLICT (company_id, segment_key) DO NOTHING`, created); err != nil {
		return err
	}
	if err := bulk.QueueRows(&b, "segments", `
		UPDATE segments s SET
			name = CASE WHEN r.sets_attrs THEN r.name ELSE s.name END,
			description = CASE WHEN r.sets_attrs THEN r.description ELSE s.description END,
			rule = CASE WHEN r.sets_attrs THEN r.rule_text::jsonb ELSE s.rule END,
			rule_text = CASE WHEN r.sets_attrs THEN r.rule_text ELSE s.rule_text END,
			state = CASE WHEN r.sets_state THEN r.state ELSE s.state END,
			updated_at = r.updated_at, version = r.version
		FROM jsonb_to_recordset($1::jsonb) AS r(company_id text, segment_key text, name text, description text,
			rule_text text, state text, updated_at timestamptz, version bigint, sets_attrs boolean, sets_state boolean)
		WHERE s.company_id = r.company_id AND s.segment_key = r.segment_key AND s.version < r.version`, changed); err != nil {
		return err
	}
	if b.Len() == 0 {
		return nil
	}
	return bulk.SendBatch(ctx, tx, "segments", &b)
}
