// Package access holds users, integrations, access tokens and their rules:
// roles, scopes, token hints and who may create what. It decides who may do
// what; it stores nothing.
package access

import (
	"slices"
	"strings"
)

// Role is a permission level carried by users and transferred to tokens.
type Role string

// Roles.
const (
	RoleAdmin     Role = "admin"
	RoleStaff     Role = "staff"
	RoleSuperuser Role = "superuser"
)

// Scope limits a token to one path (and optionally one method). A token
// without scopes may reach every path its roles allow. See ScopesAllow for
// how a request is matched.
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
	// SFTPKeyID is set when an SFTP client logged in with a registered
	// key (SFTPKey): it acts for the company, with no roles or scopes.
	SFTPKeyID string
	// OwnerID is "users/<id>" or "integrations/<id>".
	OwnerID string
	Roles   []Role
	Scopes  []Scope
	// Password is true when the request authenticated with a user's
	// password (HTTP basic), which is accepted only to create a token.
	Password bool
	// System is the operator acting through the CLI (or the service
	// itself): it passes every role check. Never set it for a request.
	System bool
}

// KeepsRoles reports whether now holds every role of had: what was opened
// with more authority (a console session, an SFTP connection, a streamed
// answer) ends when its user loses a role, and goes on when the user
// gains one.
func KeepsRoles(had, now []Role) bool {
	for _, r := range had {
		if !slices.Contains(now, r) {
			return false
		}
	}
	return true
}

// System returns the operator principal for companyID (which may be empty
// for commands that are not about one company yet, such as CreateCompany).
func System(companyID string) Principal {
	return Principal{CompanyID: companyID, System: true}
}

// Actor names the principal in event metadata: "tokens/<id>", "users/<id>",
// "sftp-keys/<id>" or "system".
func (p Principal) Actor() string {
	if p.TokenID != "" {
		return "tokens/" + p.TokenID
	}
	if p.UserID != "" {
		return "users/" + p.UserID
	}
	if p.SFTPKeyID != "" {
		return "sftp-keys/" + p.SFTPKeyID
	}
	return "system"
}

// Owner returns the owner the principal acts for: its OwnerID,
// "users/<UserID>" when only the user is known, or "" for the system.
func (p Principal) Owner() string {
	if p.OwnerID != "" {
		return p.OwnerID
	}
	if p.UserID != "" {
		return UserOwner(p.UserID)
	}
	return ""
}

// CreatedBy is what the principal is recorded as in created_by fields:
// its owner, or "system".
func (p Principal) CreatedBy() string {
	if o := p.Owner(); o != "" {
		return o
	}
	return "system"
}

// HasRole reports whether the principal carries r (superuser implies
// admin and staff, admin implies staff; the system has every role).
func (p Principal) HasRole(r Role) bool {
	if p.System {
		return true
	}
	for _, have := range p.Roles {
		if have == r || have == RoleSuperuser || (have == RoleAdmin && r == RoleStaff) {
			return true
		}
	}
	return false
}

// IsIntegration reports whether the principal is an integration's token.
func (p Principal) IsIntegration() bool { return strings.HasPrefix(p.OwnerID, "integrations/") }
