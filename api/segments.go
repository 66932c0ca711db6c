package api

import (
	"encoding/json"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/clientele/clientele/commands"
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

// segmentInput reads a segment body.
func segmentInput(c *gin.Context) (segment.Input, error) {
	var raw json.RawMessage
	if err := decodeJSON(c.Request, &raw, false); err != nil {
		return segment.Input{}, err
	}
	return segment.ParseInput(raw)
}
