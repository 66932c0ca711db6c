package console

import (
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/clientele/clientele/readmodels"
)

// The segments pages read what GET /api/segments/ and
// GET /api/segments/<key>/customers/ read (docs/segments.md): the
// segments with their sizes, each charted day by day from its recorded
// entries and exits (readmodels.Segments.SizeDays), and a segment's rule
// and members as customer retrieval shows them.

// sizeDays is how many days the size charts show, today's included.
const sizeDays = 30

// segmentsView is the list of segments.
type segmentsView struct {
	Segments []segmentRow
}

type segmentRow struct {
	Key, Name, State, Size, ComputedAt string
	Trend                              sparkline
}

// handleSegments lists the company's segments with their sizes now and
// their sizes at the end of each of the last sizeDays days.
func (c *Console) handleSegments(g *gin.Context) error {
	ctx := g.Request.Context()
	co := companyOf(g)
	list, err := c.app.Queries.Segments.Segments(ctx, co.ID)
	if err != nil {
		return err
	}
	sizes, err := c.app.Queries.Segments.SizeDays(ctx, co.ID, time.Now().AddDate(0, 0, 1-sizeDays), co.Location())
	if err != nil {
		return err
	}
	shown := newBudget()
	v := segmentsView{}
	for _, s := range list {
		v.Segments = append(v.Segments, segmentRow{Key: s.Key, Name: shown.text(s.Name, shownCellBytes).Text, State: string(s.State),
			Size: formatCount(float64(s.Size)), ComputedAt: whenp(s.ComputedAt), Trend: sizeTrend(s.Name, sizes[s.Key])})
	}
	c.render(g, http.StatusOK, "segments", "Segments", "segments", v)
	return nil
}

// sizeTrend is a segment's size day by day as a sparkline.
func sizeTrend(name string, sizes []int64) sparkline {
	values := make([]float64, len(sizes))
	for i, n := range sizes {
		values[i] = float64(n)
	}
	return newSparkline(fmt.Sprintf("Members of %s at the end of each day, last %d days", name, len(sizes)), values)
}

// segmentView is a segment's page.
type segmentView struct {
	Key, Name, Description, State, Size, ComputedAt, Created, Updated string
	Trend                                                             sparkline
	// Rule is the rule as given, shown within the bounds of shown.go.
	Rule shownText
	// Members are a page of the members, as customer retrieval shows
	// them; Next is the address of the next page ("" on the last).
	Columns  []string
	Members  []customerRow
	Next     string
	Cut      bool
	Download string
}

// handleSegment shows a segment: its figures, its rule and its members
// now, a page at a time (?after=<cursor>), as
// GET /api/segments/<key>/customers/ pages them.
func (c *Console) handleSegment(g *gin.Context) error {
	ctx := g.Request.Context()
	co := companyOf(g)
	s, err := c.app.Queries.Segments.Segment(ctx, co.ID, g.Param("key"))
	if err != nil {
		return err
	}
	sizes, err := c.app.Queries.Segments.SizeDays(ctx, co.ID, time.Now().AddDate(0, 0, 1-sizeDays), co.Location())
	if err != nil {
		return err
	}
	shown := newBudget()
	v := segmentView{Key: s.Key, Name: shown.text(s.Name, nameBytes).Text, Description: shown.text(s.Description, shownValueBytes).Text,
		State: string(s.State), Size: formatCount(float64(s.Size)), ComputedAt: whenp(s.ComputedAt),
		Created: whenZero(s.CreatedAt), Updated: whenZero(s.UpdatedAt), Trend: sizeTrend(s.Name, sizes[s.Key]),
		Rule: shown.json(s.Rule, shownValueBytes), Columns: listColumns, Download: segmentPath(s.Key) + "/rule"}
	page, err := c.app.Queries.Customers.Retrieve(ctx, readmodels.PageQuery{CompanyID: co.ID, Segment: s.Key, Limit: pageSize, After: g.Query("after")})
	if err != nil {
		return err
	}
	if v.Members, err = customerRows(shown, page.Docs); err != nil {
		return err
	}
	if page.Next != "" {
		v.Next = segmentPath(s.Key) + "?" + url.Values{"after": {page.Next}}.Encode()
	}
	v.Cut = shown.cut
	c.render(g, http.StatusOK, "segment", v.Name, "segments", v)
	return nil
}

// handleSegmentRule answers a segment's rule as given, for download: the
// segment's page shows it within bounds and links here when it is cut.
func (c *Console) handleSegmentRule(g *gin.Context) error {
	s, err := c.app.Queries.Segments.Segment(g.Request.Context(), companyOf(g).ID, g.Param("key"))
	if err != nil {
		return err
	}
	download(g, "rule.json", "application/json", s.Rule)
	return nil
}

func segmentPath(key string) string { return Prefix + "/segments/" + url.PathEscape(key) }

// whenp is t as pages show times, "–" when nil.
func whenp(t *time.Time) string {
	if t == nil {
		return "–"
	}
	return t.UTC().Format("2006-01-02 15:04:05 UTC")
}
