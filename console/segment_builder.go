package console

import (
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/clientele/clientele/commands"
	"github.com/clientele/clientele/domain"
	"github.com/clientele/clientele/domain/segment"
	"github.com/clientele/clientele/readmodels"
)

// The segment builder creates a segment from a rule typed as JSON, as
// POST /api/segments/ does (commands.CreateSegment), after a preview
// decided by POST /api/segments/preview/'s query (the members the rule
// would have now, and a sample). Staff and admins only, as the API.
//
// With its script (static/segment_builder.js) the page edits the rule as
// conditions, writes it into the form's JSON text, and asks
// POST /console/new-segment/count for the rule's size as it changes.

// maxBuilderFormBytes bounds the builder's form: a rule is at most 100
// leaves of values of 1,024 bytes, or an "in" of 1,000 of them.
const maxBuilderFormBytes = 2 << 20

// builderView is the builder's form, its preview and its refusal.
type builderView struct {
	Key, Name, Rule string
	Error           string
	// Previewed is true when Size and Sample are a preview of Rule.
	Previewed bool
	Size      string
	Columns   []string
	Sample    []customerRow
	// Fields are the customer fields the editor suggests.
	Fields []string
}

// handleBuilder shows the builder's empty form.
func (c *Console) handleBuilder(g *gin.Context) error {
	if err := segment.MayManage(principalOf(g)); err != nil {
		return err
	}
	c.render(g, http.StatusOK, "segment_builder", "New segment", "segments", builderView{Rule: "{\"field\": \"city\", \"eq\": \"Helsinki\"}", Fields: searchFields})
	return nil
}

// handleBuilderCount answers, in JSON, how many customers the posted
// rule (the form's field "rule") holds now: {"size", "text"}, for the
// builder's live count. It is the preview's query, bounded as the
// preview is (readmodels.PreviewTimeout), without the sample; a refused
// rule is the API's refusal, {"error": {"code", "message"}}, with its
// status (fail answers the scripts in JSON).
func (c *Console) handleBuilderCount(g *gin.Context) error {
	if err := segment.MayManage(principalOf(g)); err != nil {
		return err
	}
	g.Request.Body = http.MaxBytesReader(g.Writer, g.Request.Body, maxBuilderFormBytes)
	if err := g.Request.ParseForm(); err != nil {
		return domain.Errorf(domain.Invalid, "the form could not be read: %v", err)
	}
	raw := g.Request.PostForm.Get("rule")
	if !json.Valid([]byte(raw)) {
		return errRuleNotJSON
	}
	pv, err := c.decide(g, raw)
	if err != nil {
		return err
	}
	shown := formatCount(float64(pv.Size))
	text := shown + " customers now"
	if pv.Size == 1 {
		text = "1 customer now"
	}
	g.JSON(http.StatusOK, gin.H{"size": pv.Size, "text": text})
	return nil
}

// handleBuild previews the typed rule (action=preview), rendering the
// form again with the count and a sample, or creates the segment and
// sends the browser to its page (POST/redirect/GET). A refused rule or
// key shows the form again with the API's message.
func (c *Console) handleBuild(g *gin.Context) error {
	p := principalOf(g)
	if err := segment.MayManage(p); err != nil {
		return err
	}
	g.Request.Body = http.MaxBytesReader(g.Writer, g.Request.Body, maxBuilderFormBytes)
	if err := g.Request.ParseForm(); err != nil {
		return domain.Errorf(domain.Invalid, "the form could not be read: %v", err)
	}
	f := g.Request.PostForm
	v := builderView{Key: strings.TrimSpace(f.Get("segment_key")), Name: f.Get("name"), Rule: f.Get("rule"), Columns: listColumns, Fields: searchFields}
	if !json.Valid([]byte(v.Rule)) {
		return c.builderRefused(g, v, errRuleNotJSON)
	}
	if f.Get("action") == "preview" {
		if err := c.preview(g, &v); err != nil {
			return c.builderRefused(g, v, err)
		}
		c.render(g, http.StatusOK, "segment_builder", "New segment", "segments", v)
		return nil
	}
	body := map[string]any{"name": v.Name, "rule": json.RawMessage(v.Rule)}
	if v.Key != "" {
		body["segment_key"] = v.Key
	}
	raw, err := json.Marshal(body)
	if err != nil {
		return err
	}
	in, err := segment.ParseInput(raw)
	if err != nil {
		return c.builderRefused(g, v, err)
	}
	s, err := c.app.Commands.CreateSegment.Handle(c.srv.CommandContext(g, source), commands.CreateSegment{Principal: p, Input: in})
	if err != nil {
		return c.builderRefused(g, v, err)
	}
	g.Redirect(http.StatusSeeOther, segmentPath(s.Key))
	return nil
}

// errRuleNotJSON refuses a rule that is not JSON.
var errRuleNotJSON = domain.Errorf(domain.Invalid, "the rule must be JSON, such as {\"field\": \"city\", \"eq\": \"Helsinki\"}")

// preview decides v's rule now, as POST /api/segments/preview/ does,
// into v's size and sample.
func (c *Console) preview(g *gin.Context, v *builderView) error {
	pv, err := c.decide(g, v.Rule)
	if err != nil {
		return err
	}
	v.Previewed, v.Size = true, formatCount(float64(pv.Size))
	if v.Sample, err = customerRows(newBudget(), pv.Sample); err != nil {
		return err
	}
	return nil
}

// decide decides the rule (JSON) for the company's customers now, as
// POST /api/segments/preview/ does: its segment leaves must name
// segments of the company, without a cycle.
func (c *Console) decide(g *gin.Context, raw string) (readmodels.SegmentPreview, error) {
	ctx := g.Request.Context()
	co := companyOf(g)
	rule, err := segment.ParseRule(json.RawMessage(raw))
	if err != nil {
		return readmodels.SegmentPreview{}, err
	}
	err = segment.CheckRefs("", rule, func(key string) (segment.Rule, bool, error) {
		s, err := c.app.Queries.Segments.Segment(ctx, co.ID, key)
		if domain.ErrorCode(err) == domain.NotFound {
			return segment.Rule{}, false, nil
		}
		if err != nil {
			return segment.Rule{}, false, err
		}
		r, err := s.ParsedRule()
		return r, err == nil, err
	})
	if err != nil {
		return readmodels.SegmentPreview{}, err
	}
	return c.app.Queries.Segments.Preview(ctx, co.ID, rule, time.Now())
}

// builderRefused shows the form again with a refusal that is the
// form's (a bad rule, a key taken), else the error page.
func (c *Console) builderRefused(g *gin.Context, v builderView, err error) error {
	switch domain.ErrorCode(err) {
	case domain.Invalid, domain.Validation, domain.Conflict, domain.NotFound:
	default:
		return err
	}
	status, _, msg := c.srv.Problem(g, err)
	v.Error, v.Previewed = msg, false
	c.render(g, status, "segment_builder", "New segment", "segments", v)
	return nil
}
