package readmodels

import (
	"context"
	"encoding/json"
	"errors"
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
	// previewRange is how many customers a preview decides at a time on
	// the membership facts.
	previewRange = 10_000
)

// SegmentPreview is what POST /api/segments/preview/ answers.
type SegmentPreview struct {
	Size   int64             `json:"size"`
	Sample []json.RawMessage `json:"sample"`
}

// Preview decides rule for every customer of the company at now, with
// the evaluator that keeps the members (segment.Decide); a segment leaf
// reads the members now. It saves nothing.
//
// A company with a segment is decided on the facts the membership
// projection keeps; a company without one (no rule in segment_rules: the
// projection keeps no facts for it, docs/segments.md) on the retrieval
// read models, which hold the same folds of the log, behind or ahead of
// the projection as they may be: a preview saves nothing, so no history
// depends on that timing.
func (q *Segments) Preview(ctx context.Context, companyID string, rule segment.Rule, now time.Time) (SegmentPreview, error) {
	ctx, cancel := context.WithTimeout(ctx, PreviewTimeout)
	defer cancel()
	out := SegmentPreview{Sample: []json.RawMessage{}}
	var kept bool
	err := q.db.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM segment_rules WHERE company_id = $1)`, companyID).Scan(&kept)
	if err == nil && kept {
		err = q.previewKept(ctx, companyID, rule, now, &out)
	} else if err == nil {
		err = q.previewRetrieval(ctx, companyID, rule, now, &out)
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return out, domain.Errorf(domain.Unavailable, "the preview took longer than %s: narrow the rule, or try again", PreviewTimeout)
	}
	return out, err
}

// previewKept decides rule on the membership projection's facts, read in
// ranges of customers and reduced to what the rule reads (SegmentFacts.Range,
// as a backfill reads them), and then reads the sample's documents.
func (q *Segments) previewKept(ctx context.Context, companyID string, rule segment.Rule, now time.Time, out *SegmentPreview) error {
	facts := &SegmentFacts{db: q.db, src: membershipFacts}
	reads := rule.Reads()
	var sample []string
	for after := ""; ; {
		r, err := facts.Range(ctx, FactQuery{Company: companyID, After: after, Limit: previewRange, Reads: reads, Members: reads.Segments})
		if err != nil || len(r.IDs) == 0 {
			if err != nil {
				return err
			}
			break
		}
		for i, id := range r.IDs {
			f := r.Facts[i]
			f.Member = func(key string) (bool, time.Time) { return r.Members[id][key], time.Time{} }
			if in, _ := segment.Decide(rule, f, now); in {
				out.Size++
				if len(sample) < PreviewSample {
					sample = append(sample, id)
				}
			}
		}
		after = r.IDs[len(r.IDs)-1]
	}
	if len(sample) == 0 {
		return nil
	}
	rows, err := q.db.Query(ctx, `SELECT doc::text FROM segment_customers WHERE company_id = $1 AND customer_id = ANY($2)
		ORDER BY customer_id`, companyID, sample)
	if err != nil {
		return err
	}
	docs, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (json.RawMessage, error) {
		var text []byte
		err := row.Scan(&text)
		return json.RawMessage(text), err
	})
	out.Sample = append(out.Sample, docs...)
	return err
}

// previewRetrieval decides rule on the retrieval read models, page by
// page: a company with no segment has no membership facts.
func (q *Segments) previewRetrieval(ctx context.Context, companyID string, rule segment.Rule, now time.Time, out *SegmentPreview) error {
	facts := &SegmentFacts{db: q.db, src: retrievalFacts}
	for after := ""; ; {
		page, err := facts.Page(ctx, companyID, after, previewPage)
		if err != nil || len(page.IDs) == 0 {
			return err
		}
		for _, id := range page.IDs {
			f := page.Facts[id]
			f.Member = func(key string) (bool, time.Time) { return page.Members[id][key], time.Time{} }
			if in, _ := segment.Decide(rule, *f, now); in {
				out.Size++
				if len(out.Sample) < PreviewSample {
					out.Sample = append(out.Sample, page.Docs[id])
				}
			}
		}
		after = page.IDs[len(page.IDs)-1]
	}
}
