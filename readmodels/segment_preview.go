package readmodels

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
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

// previewKept decides rule on the membership projection's facts: in one
// statement (previewInSQL), or, for a rule it leaves unknown for too
// many customers, with segment.Decide on the facts read in ranges
// (previewInGo).
func (q *Segments) previewKept(ctx context.Context, companyID string, rule segment.Rule, now time.Time, out *SegmentPreview) error {
	p, err := q.previewInSQL(ctx, companyID, rule, now, previewUnknown)
	if errors.Is(err, errPreviewUnknown) {
		p, err = q.previewInGo(ctx, companyID, rule, now)
	}
	if err != nil {
		return err
	}
	*out = p
	return nil
}

// previewInGo decides rule with segment.Decide on the membership
// projection's facts, read in ranges of customers and reduced to what
// the rule reads (SegmentFacts.Range, as a backfill reads them), and then
// reads the sample's documents. It is the reference previewInSQL is
// tested against.
func (q *Segments) previewInGo(ctx context.Context, companyID string, rule segment.Rule, now time.Time) (SegmentPreview, error) {
	out := SegmentPreview{Sample: []json.RawMessage{}}
	facts := &SegmentFacts{db: q.db, src: membershipFacts}
	reads := rule.Reads()
	var sample []string
	for after := ""; ; {
		r, err := facts.Range(ctx, FactQuery{Company: companyID, After: after, Limit: previewRange, Reads: reads, Members: reads.Segments})
		if err != nil || len(r.IDs) == 0 {
			if err != nil {
				return out, err
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
	err := q.previewSample(ctx, companyID, sample, &out)
	return out, err
}

// previewUnknown bounds the customers whose rule the statement of
// previewInSQL leaves unknown and segment.Decide decides on their facts;
// beyond it the whole rule is decided with segment.Decide.
const previewUnknown = 10_000

// errPreviewUnknown is a rule the statement leaves unknown for more than
// previewUnknown customers.
var errPreviewUnknown = errors.New("readmodels: the preview's statement leaves too many customers unknown")

// previewInSQL decides rule on the membership projection's facts in one
// statement (compileRule, segment_sql.go): it counts the members and
// answers the first PreviewSample of them by customer id, and the
// customers whose rule it cannot tell (a date in a form it does not
// read), which segment.Decide decides on their facts: at most
// maxUnknown of them (errPreviewUnknown beyond).
func (q *Segments) previewInSQL(ctx context.Context, companyID string, rule segment.Rule, now time.Time, maxUnknown int) (SegmentPreview, error) {
	out := SegmentPreview{Sample: []json.RawMessage{}}
	compiled, err := compileRule(companyID, rule, now)
	if err != nil {
		return out, err
	}
	args := append(compiled.args, PreviewSample, maxUnknown+1)
	var sample, unknown []string
	// One round trip: the statement in a transaction of its own, with
	// its settings.
	var b pgx.Batch
	b.Queue(`BEGIN READ ONLY`)
	for _, set := range compiled.settings() {
		b.Queue(set)
	}
	b.Queue(`WITH decided AS MATERIALIZED (`+compiled.sql+`)
		SELECT (SELECT count(*) FROM decided WHERE member),
			ARRAY(SELECT customer_id FROM decided WHERE member ORDER BY customer_id LIMIT $`+strconv.Itoa(len(args)-1)+`),
			ARRAY(SELECT customer_id FROM decided WHERE member IS NULL ORDER BY customer_id LIMIT $`+strconv.Itoa(len(args))+`)`,
		args...).QueryRow(func(row pgx.Row) error { return row.Scan(&out.Size, &sample, &unknown) })
	b.Queue(`COMMIT`)
	if err := q.db.SendBatch(ctx, &b); err != nil {
		return out, err
	}
	if len(unknown) > maxUnknown {
		return out, errPreviewUnknown
	}
	if len(unknown) > 0 {
		facts := &SegmentFacts{db: q.db, src: membershipFacts}
		p, err := facts.Customers(ctx, CustomersQuery{Company: companyID, IDs: unknown, Reads: rule.Reads()})
		if err != nil {
			return out, err
		}
		for i, id := range p.IDs {
			f := p.Facts[i]
			f.Member = func(key string) (bool, time.Time) { return p.Members[id][key], time.Time{} }
			if in, _ := segment.Decide(rule, f, now); in {
				out.Size++
				sample = append(sample, id)
			}
		}
	}
	err = q.previewSample(ctx, companyID, sample, &out)
	return out, err
}

// previewSample reads the documents of the first PreviewSample of the
// customers ids by customer id.
func (q *Segments) previewSample(ctx context.Context, companyID string, ids []string, out *SegmentPreview) error {
	if len(ids) == 0 {
		return nil
	}
	rows, err := q.db.Query(ctx, `SELECT doc::text FROM segment_customers WHERE company_id = $1 AND customer_id = ANY($2)
		ORDER BY customer_id LIMIT $3`, companyID, ids, PreviewSample)
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
