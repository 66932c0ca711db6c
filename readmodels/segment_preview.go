package readmodels

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/clientele/clientele/domain"
	"github.com/clientele/clientele/domain/segment"
)

// Preview bounds: a preview answers at most PreviewSample customers, and
// gives up after PreviewTimeout rather than hold a connection for a rule
// over millions of customers.
const (
	PreviewSample  = 10
	PreviewTimeout = 10 * time.Second
	previewPage    = 2000
)

// SegmentPreview is what POST /api/segments/preview/ answers.
type SegmentPreview struct {
	Size   int64             `json:"size"`
	Sample []json.RawMessage `json:"sample"`
}

// Preview decides rule for every customer of the company at now, with
// the evaluator that keeps the members (segment.Decide) on the facts the
// membership projection holds; a segment leaf reads the members now. It
// saves nothing.
func (q *Segments) Preview(ctx context.Context, companyID string, rule segment.Rule, now time.Time) (SegmentPreview, error) {
	ctx, cancel := context.WithTimeout(ctx, PreviewTimeout)
	defer cancel()
	out := SegmentPreview{Sample: []json.RawMessage{}}
	after := ""
	for {
		page, err := q.previewPage(ctx, companyID, after)
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return out, domain.Errorf(domain.Unavailable, "the preview took longer than %s: narrow the rule, or try again", PreviewTimeout)
		}
		if err != nil {
			return out, err
		}
		if len(page.ids) == 0 {
			return out, nil
		}
		for _, id := range page.ids {
			f := page.facts[id]
			f.Member = func(key string) (bool, time.Time) { return page.members[id][key], time.Time{} }
			if in, _ := segment.Decide(rule, *f, now); in {
				out.Size++
				if len(out.Sample) < PreviewSample {
					out.Sample = append(out.Sample, page.docs[id])
				}
			}
		}
		after = page.ids[len(page.ids)-1]
	}
}

// previewFacts are one page of customers and their facts.
type previewFacts struct {
	ids     []string
	docs    map[string]json.RawMessage
	facts   map[string]*segment.Facts
	members map[string]map[string]bool
}

func (q *Segments) previewPage(ctx context.Context, companyID, after string) (previewFacts, error) {
	p := previewFacts{docs: map[string]json.RawMessage{}, facts: map[string]*segment.Facts{}, members: map[string]map[string]bool{}}
	var b pgx.Batch
	b.Queue(`SELECT customer_id, doc::text FROM segment_customers WHERE company_id = $1 AND customer_id > $2
		ORDER BY customer_id LIMIT $3`, companyID, after, previewPage).Query(func(rows pgx.Rows) error {
		var id string
		var text []byte
		_, err := pgx.ForEachRow(rows, []any{&id, &text}, func() error {
			d := json.NewDecoder(bytes.NewReader(text))
			d.UseNumber()
			var doc map[string]any
			if err := d.Decode(&doc); err != nil {
				return err
			}
			p.ids = append(p.ids, id)
			p.docs[id] = slices.Clone(text)
			p.facts[id] = &segment.Facts{Customer: doc}
			return nil
		})
		return err
	})
	if err := q.db.SendBatch(ctx, &b); err != nil {
		return p, fmt.Errorf("readmodels: segment preview: %w", err)
	}
	if len(p.ids) == 0 {
		return p, nil
	}
	var b2 pgx.Batch
	b2.Queue(`SELECT customer_id, type, at, fields::text FROM segment_activity WHERE company_id = $1 AND customer_id = ANY($2)`,
		companyID, p.ids).Query(func(rows pgx.Rows) error {
		var id, typ string
		var at time.Time
		var text []byte
		_, err := pgx.ForEachRow(rows, []any{&id, &typ, &at, &text}, func() error {
			d := json.NewDecoder(bytes.NewReader(text))
			d.UseNumber()
			var fields map[string]any
			if err := d.Decode(&fields); err != nil {
				return err
			}
			p.facts[id].Events = append(p.facts[id].Events, segment.Activity{Type: typ, At: at, Fields: fields})
			return nil
		})
		return err
	})
	b2.Queue(`SELECT customer_id, at, revenue, products FROM segment_sales
		WHERE company_id = $1 AND customer_id = ANY($2) AND counted AND at IS NOT NULL`, companyID, p.ids).Query(func(rows pgx.Rows) error {
		var id string
		var at time.Time
		var revenue int64
		var products []string
		_, err := pgx.ForEachRow(rows, []any{&id, &at, &revenue, &products}, func() error {
			p.facts[id].Sales = append(p.facts[id].Sales, segment.Sale{At: at, Revenue: revenue, Products: slices.Clone(products)})
			return nil
		})
		return err
	})
	b2.Queue(`SELECT customer_id, segment_key FROM segment_members WHERE company_id = $1 AND customer_id = ANY($2)`,
		companyID, p.ids).Query(func(rows pgx.Rows) error {
		var id, key string
		_, err := pgx.ForEachRow(rows, []any{&id, &key}, func() error {
			if p.members[id] == nil {
				p.members[id] = map[string]bool{}
			}
			p.members[id][key] = true
			return nil
		})
		return err
	})
	if err := q.db.SendBatch(ctx, &b2); err != nil {
		return p, fmt.Errorf("readmodels: segment preview: %w", err)
	}
	return p, nil
}
