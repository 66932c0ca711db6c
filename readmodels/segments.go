package readmodels

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/clientele/clientele/domain"
	"github.com/clientele/clientele/domain/segment"
)

// Segments reads segments (the table of projections/segments.Segments).
type Segments struct {
	db database
}

// NewSegments returns the queries on pool.
func NewSegments(pool *pgxpool.Pool) *Segments {
	if pool == nil {
		panic("readmodels: NewSegments: nil pool")
	}
	return &Segments{db: database{pool}}
}

// SegmentJSON is a segment as the API answers it.
type SegmentJSON struct {
	Key         string          `json:"segment_key"`
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Rule        json.RawMessage `json:"rule"`
	State       segment.State   `json:"state"`
	CreatedAt   time.Time       `json:"created_at"`
	UpdatedAt   time.Time       `json:"updated_at"`
}

// NewSegmentJSON is s as the API answers it.
func NewSegmentJSON(s segment.Segment) SegmentJSON {
	return SegmentJSON{Key: s.Key, Name: s.Name, Description: s.Description, Rule: s.Rule, State: s.State,
		CreatedAt: s.CreatedAt, UpdatedAt: s.UpdatedAt}
}

const selectSegment = `SELECT company_id, segment_key, name, description, rule_text, state, created_by, created_at,
	updated_at FROM segments `

// Segment returns one segment of the company, or NotFound.
func (q *Segments) Segment(ctx context.Context, companyID, key string) (segment.Segment, error) {
	rows, err := q.db.Query(ctx, selectSegment+`WHERE company_id = $1 AND segment_key = $2`, companyID, key)
	if err != nil {
		return segment.Segment{}, fmt.Errorf("readmodels: segment: %w", err)
	}
	s, err := pgx.CollectExactlyOneRow(rows, scanSegment)
	if errors.Is(err, pgx.ErrNoRows) {
		return s, domain.Errorf(domain.NotFound, "no such segment")
	}
	if err != nil {
		return s, fmt.Errorf("readmodels: segment: %w", err)
	}
	return s, nil
}

// Segments returns the company's segments, oldest first (a company has
// tens of them, not thousands: the list is not paged).
func (q *Segments) Segments(ctx context.Context, companyID string) ([]segment.Segment, error) {
	rows, err := q.db.Query(ctx, selectSegment+`WHERE company_id = $1 ORDER BY created_at, segment_key`, companyID)
	if err != nil {
		return nil, fmt.Errorf("readmodels: segments: %w", err)
	}
	list, err := pgx.CollectRows(rows, scanSegment)
	if err != nil {
		return nil, fmt.Errorf("readmodels: segments: %w", err)
	}
	return list, nil
}

func scanSegment(row pgx.CollectableRow) (segment.Segment, error) {
	var s segment.Segment
	var rule string
	err := row.Scan(&s.CompanyID, &s.Key, &s.Name, &s.Description, &rule, &s.State, &s.CreatedBy, &s.CreatedAt, &s.UpdatedAt)
	s.Rule, s.CreatedAt, s.UpdatedAt = json.RawMessage(rule), s.CreatedAt.UTC(), s.UpdatedAt.UTC()
	return s, err
}
