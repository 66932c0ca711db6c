// Package access holds users, integrations, access tokens and their rules:
// roles, scopes, token hints. It decides who may do what; it stores nothing.
package access

import "strings"

// Role is a permission level carried by users and transferred to tokens.
type Role string

// Roles.
const (
	RoleAdmin     Role = "admin"
	RoleStaff     Role = "staff"
	RoleSuperuser Role = "superuser"
)

// Scope limits a token to one path (and optionally one method). A token
// without scopes may reach every path its roles allow.
type Scope struct {
	Method string `json:"method,omitempty"`
	Path   string `json:"path"`
}

// Principal is who made a request, once authenticated.
type Principal struct {
	CompanyID string
	// UserID is set when a user authenticated with a password, or for a
	// token owned by a user.
	UserID string
	// TokenID is set when the request carried an access token.
	TokenID string
	// OwnerID is "users/<id>" or "integrations/<id>".
	OwnerID string
	Roles   []Role
	Scopes  []Scope
	// Password is true when the request authenticated with a user's
	// password (HTTP basic), which is accepted only to create a token.
	Password bool
}

// Actor names the principal in event metadata: "tokens/<id>" or "users/<id>".
func (p Principal) Actor() string {
	if p.TokenID != "" {
		return "tokens/" + p.TokenID
	}
	if p.UserID != "" {
		return "users/" + p.UserID
	}
	return "system"
}

// HasRole reports whether the principal carries r (superuser implies admin).
func (p Principal) HasRole(r Role) bool {
	for _, have := range p.Roles {
		if have == r || (have == RoleSuperuser && r == RoleAdmin) {
			return true
		}
	}
	return false
}

// IsIntegration reports whether the principal is an integration's token.
func (p Principal) IsIntegration() bool { return strings.HasPrefix(p.OwnerID, "integrations/") }
