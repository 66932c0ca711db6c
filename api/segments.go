package api

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/clientele/clientele/commands"
	"github.com/clientele/clientele/domain"
	"github.com/clientele/clientele/domain/segment"
	"github.com/clientele/clientele/readmodels"
)

// handleListSegments serves GET /api/segments/: the company's segments,
// oldest first, as {"segments": [...]}.
func (s *Server) handleListSegments(c *gin.Context) error {
	p, _ := principalOf(c)
	if _, err := onlyParams(c.Request.URL, nil); err != nil {
		return err
	}
	list, err := s.segments.Segments(c.Request.Context(), p.CompanyID)
	if err != nil {
		return err
	}
	out := make([]readmodels.SegmentJSON, len(list))
	for i, sg := range list {
		out[i] = readmodels.NewSegmentJSON(sg)
	}
	c.JSON(http.StatusOK, gin.H{"segments": out})
	return nil
}

// handleCreateSegment serves POST /api/segments/ (staff role): a new
// segment, under the segment_key given or a generated SE-<n>. A bad rule
// is 422 naming the path of the bad part.
func (s *Server) handleCreateSegment(c *gin.Context) error {
	in, err := segmentInput(c)
	if err != nil {
		return err
	}
	p, _ := principalOf(c)
	sg, err := s.commands.CreateSegment.Handle(commandContext(c), commands.CreateSegment{Principal: p, Input: in})
	if err != nil {
		return err
	}
	return s.answerSegment(c, sg.Key)
}

// handleGetSegment serves GET /api/segments/<segment_key>/.
func (s *Server) handleGetSegment(c *gin.Context) error {
	return s.answerSegment(c, c.Param("key"))
}

// handlePatchSegment serves PATCH /api/segments/<segment_key>/ (staff
// role): name, description, rule and state; absent or null fields stay.
func (s *Server) handlePatchSegment(c *gin.Context) error {
	in, err := segmentInput(c)
	if err != nil {
		return err
	}
	p, _ := principalOf(c)
	key := c.Param("key")
	if _, err := s.commands.UpdateSegment.Handle(commandContext(c), commands.UpdateSegment{Principal: p, Key: key, Input: in}); err != nil {
		return err
	}
	return s.answerSegment(c, key)
}

// answerSegment answers {"segment": {...}} from the read model, which is
// inline: an answer to a POST or PATCH is exactly what a GET answers.
func (s *Server) answerSegment(c *gin.Context, key string) error {
	p, _ := principalOf(c)
	sg, err := s.segments.Segment(c.Request.Context(), p.CompanyID, key)
	if err != nil {
		return err
	}
	c.JSON(http.StatusOK, gin.H{"segment": readmodels.NewSegmentJSON(sg)})
	return nil
}

// segmentInput reads a segment body: a key it does not take is a 400
// naming it, as for every PATCH (onlyKeysOf).
func segmentInput(c *gin.Context) (segment.Input, error) {
	var raw json.RawMessage
	if err := decodeJSON(c.Request, &raw, false); err != nil {
		return segment.Input{}, err
	}
	if err := onlyKeysOf(raw, &segment.Input{}); err != nil {
		return segment.Input{}, err
	}
	return segment.ParseInput(raw)
}

// segmentParam filters retrieved customers by their membership of a
// segment now (docs/segments.md), rather than by a field named segment.
const segmentParam = "segment"

// segmentFilter takes the segment parameter out of q's filters.
func segmentFilter(q readmodels.PageQuery) (readmodels.PageQuery, error) {
	filters := q.Filters[:0:0]
	for _, f := range q.Filters {
		if f.Field != segmentParam {
			filters = append(filters, f)
			continue
		}
		if q.Segment != "" || f.Value == "" {
			return q, invalidParam(segmentParam, "must be one segment_key")
		}
		q.Segment = f.Value
	}
	q.Filters = filters
	return q, nil
}

// handleSegmentCustomers serves GET /api/segments/<segment_key>/customers/:
// the segment's members now, as customer retrieval shows them, paged as
// it is (limit, next_url). An unknown segment is 404.
func (s *Server) handleSegmentCustomers(c *gin.Context) error {
	if err := s.membersComputed(); err != nil {
		return err
	}
	p, _ := principalOf(c)
	if _, err := s.segments.Segment(c.Request.Context(), p.CompanyID, c.Param("key")); err != nil {
		return err
	}
	if _, err := onlyParams(c.Request.URL, []string{"limit", "cursor", "from"}); err != nil {
		return err
	}
	q, err := retrievalQuery(c.Request, p.CompanyID)
	if err != nil {
		return err
	}
	q.Segment = c.Param("key")
	return s.writeRetrieval(c, "customers", func(each readmodels.DocFunc) (string, error) {
		return s.customers.Stream(c.Request.Context(), q, each)
	})
}

// handleCustomerSegments serves GET /api/customers/<id>/segments/: the
// segments the customer is in now, with when it entered each.
func (s *Server) handleCustomerSegments(c *gin.Context) error {
	if err := s.membersComputed(); err != nil {
		return err
	}
	p, _ := principalOf(c)
	if _, err := onlyParams(c.Request.URL, nil); err != nil {
		return err
	}
	// A customer retrieval does not show (another company's, or none) is
	// 404, not a customer in no segment.
	if _, err := s.customers.Doc(c.Request.Context(), p.CompanyID, c.Param("id")); err != nil {
		return err
	}
	list, err := s.segments.CustomerSegments(c.Request.Context(), p.CompanyID, c.Param("id"))
	if err != nil {
		return err
	}
	c.JSON(http.StatusOK, gin.H{"segments": list})
	return nil
}

// handleSegmentHistory serves GET /api/segments/<segment_key>/history/:
// the entries and exits, oldest first, of one customer (customer) or all,
// from and to bounding their instants (RFC 3339; from included, to not).
func (s *Server) handleSegmentHistory(c *gin.Context) error {
	if err := s.membersComputed(); err != nil {
		return err
	}
	p, _ := principalOf(c)
	params, err := onlyParams(c.Request.URL, []string{"customer", "from", "to"})
	if err != nil {
		return err
	}
	q := readmodels.SegmentHistoryQuery{CompanyID: p.CompanyID, Key: c.Param("key"), CustomerID: params.Get("customer")}
	for name, t := range map[string]*time.Time{"from": &q.From, "to": &q.To} {
		if v := params.Get(name); v != "" {
			if *t, err = time.Parse(time.RFC3339Nano, v); err != nil {
				return invalidParam(name, "must be a datetime (RFC 3339, 2026-03-01T12:00:00Z)")
			}
		}
	}
	if _, err := s.segments.Segment(c.Request.Context(), p.CompanyID, q.Key); err != nil {
		return err
	}
	entries, err := s.segments.History(c.Request.Context(), q)
	if err != nil {
		return err
	}
	c.JSON(http.StatusOK, gin.H{"entries": entries})
	return nil
}

// handlePreviewSegment serves POST /api/segments/preview/ (staff role):
// {"rule"} answers {"size", "sample": [up to 10 customers]}, decided now
// by the evaluator that keeps the members, saving nothing.
func (s *Server) handlePreviewSegment(c *gin.Context) error {
	if err := s.membersComputed(); err != nil {
		return err
	}
	var body map[string]json.RawMessage
	if err := decodeJSON(c.Request, &body, false); err != nil {
		return err
	}
	for k := range body {
		if k != "rule" {
			return domain.Errorf(domain.Invalid, "the request body must be {\"rule\": ...} only")
		}
	}
	rule, err := segment.ParseRule(body["rule"])
	if err != nil {
		return err
	}
	p, _ := principalOf(c)
	ctx := c.Request.Context()
	err = segment.CheckRefs("", rule, func(key string) (segment.Rule, bool, error) {
		sg, err := s.segments.Segment(ctx, p.CompanyID, key)
		if err != nil {
			if domain.ErrorCode(err) == domain.NotFound {
				return segment.Rule{}, false, nil
			}
			return segment.Rule{}, false, err
		}
		r, err := sg.ParsedRule()
		return r, err == nil, err
	})
	if err != nil {
		return err
	}
	preview, err := s.segments.Preview(ctx, p.CompanyID, rule, time.Now())
	if err != nil {
		return err
	}
	c.JSON(http.StatusOK, preview)
	return nil
}

// membersComputed is nil when this deployment computes the members of
// segments, else the 409 of the routes that answer them.
func (s *Server) membersComputed() error {
	if s.cfg.SegmentMembersOff {
		return domain.Errorf(domain.Conflict, "this server does not compute the members of segments: it was started with --segment-members=false; start it without (docs/segments.md)")
	}
	return nil
}
