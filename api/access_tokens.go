package api

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/clientele/clientele/commands"
	"github.com/clientele/clientele/domain/access"
)

// createAccessTokenRequest is the body of POST /api/access-tokens/. Every
// field is optional; no body at all asks for a token of the caller's own.
type createAccessTokenRequest struct {
	Name string `json:"name"`
	// OwnerID is "integrations/<id>" or "users/<id>"; empty is the caller.
	OwnerID            string         `json:"owner_id"`
	Scopes             []access.Scope `json:"scopes"`
	TransferPrivileges bool           `json:"transfer_privileges"`
}

// accessTokenJSON is an access token as answered.
type accessTokenJSON struct {
	ID        string `json:"id"`
	OwnerID   string `json:"owner_id"`
	CreatedAt string `json:"created_at"`
	Hint      string `json:"hint"`
	Name      string `json:"name"`
	CreatedBy string `json:"created_by"`
	// TransferredRoles is a list of role lists, as the interface types it:
	// [[roles...]] with the token's one set of roles, [] when it has none.
	TransferredRoles [][]access.Role `json:"transferred_roles"`
	Scopes           []access.Scope  `json:"scopes"`
	// Token is the secret value, present only in the creation answer.
	Token string `json:"token,omitempty"`
}

func newAccessTokenJSON(t access.AccessToken, secret string) accessTokenJSON {
	roles := [][]access.Role{}
	if len(t.TransferredRoles) > 0 {
		roles = append(roles, t.TransferredRoles)
	}
	scopes := t.Scopes
	if scopes == nil {
		scopes = []access.Scope{}
	}
	return accessTokenJSON{
		ID:               t.ID,
		OwnerID:          t.OwnerID,
		CreatedAt:        timestamp(t.CreatedAt),
		Hint:             t.Hint,
		Name:             t.Name,
		CreatedBy:        t.CreatedBy,
		TransferredRoles: roles,
		Scopes:           scopes,
		Token:            secret,
	}
}

// handleCreateAccessToken serves POST /api/access-tokens/: it creates a
// token and answers its value, the only time it is shown. This is the one
// route that also takes a user's email and password (HTTP basic).
func (s *Server) handleCreateAccessToken(c *gin.Context) error {
	var req createAccessTokenRequest
	if err := decodeJSON(c.Request, &req, true); err != nil {
		return err
	}
	p, _ := principalOf(c)
	tok, secret, err := s.commands.CreateAccessToken.Handle(commandContext(c), commands.CreateAccessToken{
		Principal:          p,
		Name:               req.Name,
		OwnerID:            req.OwnerID,
		Scopes:             req.Scopes,
		TransferPrivileges: req.TransferPrivileges,
	})
	if err != nil {
		return err
	}
	c.JSON(http.StatusOK, gin.H{"access_token": newAccessTokenJSON(tok, secret)})
	return nil
}
