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
)

// The segment builder creates a segment from a rule typed as JSON, as
// POST /api/segments/ does (commands.CreateSegment), after a preview
// decided by POST /api/segments/preview/'s query (the members the rule
// would have now, and a sample). Staff and admins only, as the API.

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
}

// handleBuilder shows the builder's empty form.
func (c *Console) handleBuilder(g *gin.Context) error {
	if err := segment.MayManage(principalOf(g)); err != nil {
		return err
	}
	c.render(g, http.StatusOK, "segment_builder", "New segment", "segments", builderView{Rule: "{\"field\": \"city\", \"eq\": \"Helsinki\"}"})
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
	v := builderView{Key: strings.TrimSpace(f.Get("segment_key")), Name: f.Get("name"), Rule: f.Get("rule"), Columns: listColumns}
	if !json.Valid([]byte(v.Rule)) {
		return c.builderRefused(g, v, domain.Errorf(domain.Invalid, "the rule must be JSON, such as {\"field\": \"city\", \"eq\": \"Helsinki\"}"))
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

// preview decides v's rule now, as POST /api/segments/preview/ does.
func (c *Console) preview(g *gin.Context, v *builderView) error {
	ctx := g.Request.Context()
	co := companyOf(g)
	rule, err := segment.ParseRule(json.RawMessage(v.Rule))
	if err != nil {
		return err
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
		return err
	}
	pv, err := c.app.Queries.Segments.Preview(ctx, co.ID, rule, time.Now())
	if err != nil {
		return err
	}
	v.Previewed, v.Size = true, formatCount(float64(pv.Size))
	if v.Sample, err = customerRows(newBudget(), pv.Sample); err != nil {
		return err
	}
	return nil
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
