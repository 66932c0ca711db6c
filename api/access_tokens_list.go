package api

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/clientele/clientele/domain/access"
)

// handleListAccessTokens serves GET /api/access-tokens/ (our addition):
// the company's tokens the caller may see (access.VisibleAccessTokens), oldest
// first, never with their values. A revoked token is not listed: its
// row is gone. Not paged, as GET /api/integrations/ is not.
func (s *Server) handleListAccessTokens(c *gin.Context) error {
	p, _ := principalOf(c)
	tokens, err := s.access.AccessTokens(c.Request.Context(), p.CompanyID)
	if err != nil {
		return err
	}
	visible := access.VisibleAccessTokens(p, tokens)
	out := make([]accessTokenJSON, 0, len(visible))
	for _, t := range visible {
		out = append(out, newAccessTokenJSON(t, ""))
	}
	c.JSON(http.StatusOK, gin.H{"access_tokens": out})
	return nil
}
