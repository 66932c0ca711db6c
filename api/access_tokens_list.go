package api

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/clientele/clientele/domain/access"
)

// VisibleAccessTokens keeps the tokens p may see: those p may revoke
// (access.MayRevokeAccessToken), so that a list never shows a token its
// reader could not revoke, nor hides one it could. A user sees its own,
// an integration's token those of its integration, an admin every token
// of the company. tokens are one company's, p's (readmodels.Access.
// AccessTokens). GET /api/access-tokens/ and the console's access page
// both list through it.
func VisibleAccessTokens(p access.Principal, tokens []access.AccessToken) []access.AccessToken {
	out := make([]access.AccessToken, 0, len(tokens))
	for _, t := range tokens {
		if access.MayRevokeAccessToken(p, t.OwnerID) == nil {
			out = append(out, t)
		}
	}
	return out
}

// handleListAccessTokens serves GET /api/access-tokens/ (our addition):
// the company's tokens the caller may see (VisibleAccessTokens), oldest
// first, never with their values. A revoked token is not listed: its
// row is gone. Not paged, as GET /api/integrations/ is not.
func (s *Server) handleListAccessTokens(c *gin.Context) error {
	p, _ := principalOf(c)
	tokens, err := s.access.AccessTokens(c.Request.Context(), p.CompanyID)
	if err != nil {
		return err
	}
	visible := VisibleAccessTokens(p, tokens)
	out := make([]accessTokenJSON, 0, len(visible))
	for _, t := range visible {
		out = append(out, newAccessTokenJSON(t, ""))
	}
	c.JSON(http.StatusOK, gin.H{"access_tokens": out})
	return nil
}
