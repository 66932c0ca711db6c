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
	// Size is the number of members now.
	Size int64 `json:"size"`
	// ComputedAt is the time of the last change of the company's data
	// the members reflect; null before the first.
	ComputedAt *time.Time `json:"computed_at"`
}

// Segment is a segment with its size.
type Segment struct {
	segment.Segment
	Size       int64
	ComputedAt *time.Time
}

// NewSegmentJSON is s as the API answers it.
func NewSegmentJSON(s Segment) SegmentJSON {
	return SegmentJSON{Key: s.Key, Name: s.Name, Description: s.Description, Rule: s.Rule, State: s.State,
		CreatedAt: s.CreatedAt, UpdatedAt: s.UpdatedAt, Size: s.Size, ComputedAt: s.ComputedAt}
}

const selectSegment = `SELECT company_id, segment_key, name, description, rule_text, state, created_by, created_at,
	updated_at, (SELECT count(*) FROM segment_members m WHERE m.company_id = s.company_id AND m.segment_key = s.segment_key),
	(SELECT computed_at FROM segment_clock c WHERE c.company_id = s.company_id)
	FROM segments s `

// Segment returns one segment of the company, or NotFound.
func (q *Segments) Segment(ctx context.Context, companyID, key string) (Segment, error) {
	rows, err := q.db.Query(ctx, selectSegment+`WHERE company_id = $1 AND segment_key = $2`, companyID, key)
	if err != nil {
		return Segment{}, fmt.Errorf("readmodels: segment: %w", err)
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
func (q *Segments) Segments(ctx context.Context, companyID string) ([]Segment, error) {
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

func scanSegment(row pgx.CollectableRow) (Segment, error) {
	var s Segment
	var rule string
	err := row.Scan(&s.CompanyID, &s.Key, &s.Name, &s.Description, &rule, &s.State, &s.CreatedBy, &s.CreatedAt, &s.UpdatedAt, &s.Size, &s.ComputedAt)
	if s.ComputedAt != nil {
		t := s.ComputedAt.UTC()
		s.ComputedAt = &t
	}
	s.Rule, s.CreatedAt, s.UpdatedAt = json.RawMessage(rule), s.CreatedAt.UTC(), s.UpdatedAt.UTC()
	return s, err
}

// CustomerSegment is a segment a customer is in, as
// GET /api/customers/<id>/segments/ answers it.
type CustomerSegment struct {
	Key       string    `json:"segment_key"`
	Name      string    `json:"name"`
	EnteredAt time.Time `json:"entered_at"`
}

// CustomerSegments returns the segments the customer is in now, by key.
func (q *Segments) CustomerSegments(ctx context.Context, companyID, customerID string) ([]CustomerSegment, error) {
	rows, err := q.db.Query(ctx, `SELECT m.segment_key, coalesce(s.name, ''), m.entered_at FROM segment_members m
		LEFT JOIN segments s USING (company_id, segment_key)
		WHERE m.company_id = $1 AND m.customer_id = $2 ORDER BY m.segment_key`, companyID, customerID)
	if err != nil {
		return nil, fmt.Errorf("readmodels: customer segments: %w", err)
	}
	list, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (CustomerSegment, error) {
		var c CustomerSegment
		err := r.Scan(&c.Key, &c.Name, &c.EnteredAt)
		c.EnteredAt = c.EnteredAt.UTC()
		return c, err
	})
	if err != nil {
		return nil, fmt.Errorf("readmodels: customer segments: %w", err)
	}
	return list, nil
}

// MaxHistory bounds the entries one history answer holds: narrow it by
// customer, from and to.
const MaxHistory = 10000

// SegmentHistoryQuery asks for a segment's entries and exits.
type SegmentHistoryQuery struct {
	CompanyID, Key string
	// CustomerID, when not empty, keeps one customer's.
	CustomerID string
	// From (included) and To (excluded) bound the instants; zero: open.
	From, To time.Time
}

// HistoryEntry is one entry or exit.
type HistoryEntry struct {
	CustomerID string    `json:"customer_id"`
	Member     bool      `json:"member"`
	At         time.Time `json:"at"`
	Cause      string    `json:"cause"`
}

// History returns a segment's entries and exits in the order they were
// recorded (by instant), at most MaxHistory of them.
func (q *Segments) History(ctx context.Context, hq SegmentHistoryQuery) ([]HistoryEntry, error) {
	var from, to *time.Time
	if !hq.From.IsZero() {
		from = &hq.From
	}
	if !hq.To.IsZero() {
		to = &hq.To
	}
	rows, err := q.db.Query(ctx, `SELECT customer_id, member, at, cause FROM segment_history
		WHERE company_id = $1 AND segment_key = $2 AND ($3 = '' OR customer_id = $3)
		AND ($4::timestamptz IS NULL OR at >= $4) AND ($5::timestamptz IS NULL OR at < $5)
		ORDER BY at, seq LIMIT $6`, hq.CompanyID, hq.Key, hq.CustomerID, from, to, MaxHistory)
	if err != nil {
		return nil, fmt.Errorf("readmodels: segment history: %w", err)
	}
	list, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (HistoryEntry, error) {
		var h HistoryEntry
		err := r.Scan(&h.CustomerID, &h.Member, &h.At, &h.Cause)
		h.At = h.At.UTC()
		return h, err
	})
	if err != nil {
		return nil, fmt.Errorf("readmodels: segment history: %w", err)
	}
	return list, nil
}
