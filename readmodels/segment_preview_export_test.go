package readmodels

import (
	"context"
	"time"

	"github.com/clientele/clientele/domain/segment"
)

// PreviewInGo is previewInGo, the reference, for the benchmark of the
// preview (package readmodels_test).
func (q *Segments) PreviewInGo(ctx context.Context, companyID string, rule segment.Rule, now time.Time) (SegmentPreview, error) {
	return q.previewInGo(ctx, companyID, rule, now)
}

// PreviewInSQL is previewInSQL with its bound of unknown customers.
func (q *Segments) PreviewInSQL(ctx context.Context, companyID string, rule segment.Rule, now time.Time) (SegmentPreview, error) {
	return q.previewInSQL(ctx, companyID, rule, now, previewUnknown)
}

// PreviewStatement is the statement previewInSQL runs for rule, with its
// arguments and the settings of its transaction, for EXPLAIN.
func PreviewStatement(companyID string, rule segment.Rule, now time.Time) (settings []string, sql string, args []any, err error) {
	c, err := compileRule(companyID, rule, now)
	return c.settings(), c.sql, c.args, err
}
