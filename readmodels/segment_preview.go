package readmodels

import (
	"context"
	"encoding/json"
	"errors"
	"time"

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
	facts := &SegmentFacts{db: q.db, src: retrievalFacts}
	var kept bool
	err := q.db.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM segment_rules WHERE company_id = $1)`, companyID).Scan(&kept)
	if kept {
		facts.src = membershipFacts
	}
	after := ""
	for err == nil {
		var page CustomerFacts
		if page, err = facts.Page(ctx, companyID, after, previewPage); err != nil || len(page.IDs) == 0 {
			break
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
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return out, domain.Errorf(domain.Unavailable, "the preview took longer than %s: narrow the rule, or try again", PreviewTimeout)
	}
	return out, err
}
