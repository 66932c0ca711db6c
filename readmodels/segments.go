package readmodels

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
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

// MaxSizeDays bounds the days SizeDays charts.
const MaxSizeDays = 366

// SizeDays returns the size of each of the company's segments at the end
// of each day (dates in loc) from the date of since to today's, oldest
// first, today's being the size now: the size now, less the entries and
// plus the exits recorded after each day. It reads the segments' members
// counts and their history since that date through the history's index
// (segment by segment), so its cost grows with the entries and exits of
// those days, not with the whole history; at most MaxSizeDays days.
func (q *Segments) SizeDays(ctx context.Context, companyID string, since time.Time, loc *time.Location) (map[string][]int64, error) {
	if loc == nil {
		loc = time.UTC
	}
	now := time.Now().In(loc)
	today := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, loc)
	y, m, d := since.In(loc).Date()
	start := time.Date(y, m, d, 0, 0, 0, 0, loc)
	// Days of 23 or 25 hours round to one.
	days := int(math.Round(today.Sub(start).Hours()/24)) + 1
	if days < 1 || days > MaxSizeDays {
		days = min(MaxSizeDays, max(days, 1))
		start = today.AddDate(0, 0, 1-days)
	}
	rows, err := q.db.Query(ctx, `SELECT s.segment_key,
			(SELECT count(*) FROM segment_members m WHERE m.company_id = s.company_id AND m.segment_key = s.segment_key),
			coalesce(d.day, ''), coalesce(d.net, 0)
		FROM segments s LEFT JOIN LATERAL (
			SELECT to_char(h.at AT TIME ZONE $2, 'YYYY-MM-DD') AS day, sum(CASE WHEN h.member THEN 1 ELSE -1 END)::bigint AS net
			FROM segment_history h WHERE h.company_id = s.company_id AND h.segment_key = s.segment_key AND h.at >= $3
			GROUP BY 1) d ON true
		WHERE s.company_id = $1`, companyID, loc.String(), start)
	if err != nil {
		return nil, fmt.Errorf("readmodels: segment sizes: %w", err)
	}
	defer rows.Close()
	size := map[string]int64{}
	net := map[string]map[string]int64{}
	for rows.Next() {
		var key, day string
		var n, change int64
		if err := rows.Scan(&key, &n, &day, &change); err != nil {
			return nil, fmt.Errorf("readmodels: segment sizes: %w", err)
		}
		size[key] = n
		if net[key] == nil {
			net[key] = map[string]int64{}
		}
		if day != "" {
			net[key][day] = change
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("readmodels: segment sizes: %w", err)
	}
	out := make(map[string][]int64, len(size))
	for key, n := range size {
		sizes := make([]int64, days)
		for i := days - 1; i >= 0; i-- {
			sizes[i] = n
			n -= net[key][start.AddDate(0, 0, i).Format("2006-01-02")]
		}
		out[key] = sizes
	}
	return out, nil
}
