package api

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/clientele/clientele/commands"
)

// handleRevokeAccessToken serves DELETE /api/access-tokens/<id>/ (our
// addition): the token no longer authenticates, from this answer on. A
// user revokes its own tokens, an admin any of the company's
// (access.MayRevokeAccessToken).
func (s *Server) handleRevokeAccessToken(c *gin.Context) error {
	p, _ := principalOf(c)
	err := s.commands.RevokeAccessToken.Handle(commandContext(c), commands.RevokeAccessToken{Principal: p, TokenID: c.Param("id")})
	if err != nil {
		return err
	}
	c.JSON(http.StatusOK, gin.H{"response": "ok"})
	return nil
}
