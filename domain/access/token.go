package access

import (
	"crypto/rand"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/clientele/clientele/domain"
)

// AccessToken is a credential for the REST interface. Its secret value is
// never kept: only its SHA-256 hash is stored (by the read model) and the
// hint shows its first and last characters.
type AccessToken struct {
	ID        string
	CompanyID string
	// OwnerID is "users/<id>" or "integrations/<id>".
	OwnerID string
	// Hint is the masked value, see TokenHint.
	Hint string
	Name string
	// CreatedBy is the creator's owner id ("users/<id>",
	// "integrations/<id>") or "system".
	CreatedBy        string
	CreatedAt        time.Time
	TransferredRoles []Role
	Scopes           []Scope
}

// UserID returns the id of the user owning the token, or "".
func (t AccessToken) UserID() string {
	if o, err := ParseOwnerID(t.OwnerID); err == nil && o.Kind == OwnerUser {
		return o.ID
	}
	return ""
}

// Principal returns the principal of a request authenticated with t.
func (t AccessToken) Principal() Principal {
	return Principal{
		CompanyID: t.CompanyID,
		UserID:    t.UserID(),
		TokenID:   t.ID,
		OwnerID:   t.OwnerID,
		Roles:     t.TransferredRoles,
		Scopes:    t.Scopes,
	}
}

// Token values: TokenPrefix followed by TokenRandomLength base62
// characters (about 190 bits of randomness).
const (
	TokenPrefix       = "clt_"
	TokenRandomLength = 32
	maxTokenName      = 200
)

const base62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// NewTokenValue returns a fresh random token value, "clt_" and 32 base62
// characters.
func NewTokenValue() string {
	var b strings.Builder
	b.Grow(len(TokenPrefix) + TokenRandomLength)
	b.WriteString(TokenPrefix)
	buf := make([]byte, 64)
	for b.Len() < len(TokenPrefix)+TokenRandomLength {
		_, _ = rand.Read(buf) // never fails (crypto/rand panics instead)
		for _, c := range buf {
			// 248 = 4*62: rejecting the top values keeps the draw uniform.
			if c < 248 && b.Len() < len(TokenPrefix)+TokenRandomLength {
				b.WriteByte(base62[c%62])
			}
		}
	}
	return b.String()
}

// LooksLikeToken reports whether s has the shape of a token value, so that
// garbage is refused without a database lookup.
func LooksLikeToken(s string) bool {
	if len(s) != len(TokenPrefix)+TokenRandomLength || !strings.HasPrefix(s, TokenPrefix) {
		return false
	}
	for i := len(TokenPrefix); i < len(s); i++ {
		if strings.IndexByte(base62, s[i]) < 0 {
			return false
		}
	}
	return true
}

// TokenHint masks a token value: its first 4 and last 4 characters with
// asterisks between, as long as the value itself. Values of 8 characters
// or fewer are masked entirely.
func TokenHint(value string) string {
	n := utf8.RuneCountInString(value)
	if n <= 8 {
		return strings.Repeat("*", n)
	}
	r := []rune(value)
	return string(r[:4]) + strings.Repeat("*", n-8) + string(r[n-4:])
}

// TokenRequest is what a principal asks for when creating a token.
type TokenRequest struct {
	Name string
	// OwnerID is "users/<id>", "integrations/<id>", or "" for the
	// principal's own owner.
	OwnerID            string
	Scopes             []Scope
	TransferPrivileges bool
}

// NewAccessToken decides whether p may create the token req asks for and
// returns it, with id, the hint of value and creation time now.
//
// The policy:
//   - a user may always create a token for themself (owner "users/<own
//     id>", or no owner), and it carries the user's roles;
//   - a token for an integration needs the admin role; it carries the
//     creator's roles only with TransferPrivileges, else none;
//   - a token for another user can be created only by the system (the CLI);
//   - a principal limited by scopes can only hand out tokens within its
//     own scopes.
//
// Roles are the creator's current ones (a token's transferred roles), so a
// token can never carry more than the principal creating it. The caller
// still has to check that the owner exists.
func NewAccessToken(p Principal, req TokenRequest, id, value string, now time.Time) (AccessToken, error) {
	ownerID := strings.TrimSpace(req.OwnerID)
	if ownerID == "" {
		ownerID = p.Owner()
	}
	if ownerID == "" {
		return AccessToken{}, domain.Errorf(domain.Validation, "owner_id is required")
	}
	owner, err := ParseOwnerID(ownerID)
	if err != nil {
		return AccessToken{}, err
	}
	self := owner.Kind == OwnerUser && p.UserID != "" && owner.ID == p.UserID
	switch {
	case self || p.System:
	case owner.Kind == OwnerIntegration:
		if !p.HasRole(RoleAdmin) {
			return AccessToken{}, domain.Errorf(domain.Forbidden, "creating a token for an integration requires the admin role")
		}
	default:
		return AccessToken{}, domain.Errorf(domain.Forbidden, "a token for a user can only be created by that user")
	}
	name := strings.TrimSpace(req.Name)
	if utf8.RuneCountInString(name) > maxTokenName {
		return AccessToken{}, domain.Errorf(domain.Validation, "name is longer than %d characters", maxTokenName)
	}
	scopes, err := ValidateScopes(req.Scopes)
	if err != nil {
		return AccessToken{}, err
	}
	if !ScopesCover(p.Scopes, scopes) {
		return AccessToken{}, domain.Errorf(domain.Forbidden, "a scoped token can only create tokens within its own scopes")
	}
	roles := []Role{}
	if self || req.TransferPrivileges {
		roles = append(roles, p.Roles...)
	}
	return AccessToken{
		ID:               id,
		CompanyID:        p.CompanyID,
		OwnerID:          owner.String(),
		Hint:             TokenHint(value),
		Name:             name,
		CreatedBy:        p.CreatedBy(),
		CreatedAt:        now.UTC(),
		TransferredRoles: roles,
		Scopes:           scopes,
	}, nil
}
