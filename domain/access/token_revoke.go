package access

import (
	"time"

	"github.com/clientele/clientele/domain"
)

// AccessTokenRevokedType ends an access token's stream: the token no
// longer authenticates. Durable: never rename it.
const AccessTokenRevokedType = "AccessTokenRevoked"

// AccessTokenRevoked records a revocation.
type AccessTokenRevoked struct {
	ID        string    `json:"id"`
	RevokedAt time.Time `json:"revoked_at"`
	// RevokedBy is the revoker's owner id or "system".
	RevokedBy string `json:"revoked_by"`
}

// MayRevokeAccessToken decides who revokes a token owned by ownerID: its
// owner (a user its own tokens, an integration's token those of that
// integration), and admins every token of the company, as they may create
// tokens for any integration.
func MayRevokeAccessToken(p Principal, ownerID string) error {
	if IsAdmin(p) || (p.Owner() != "" && p.Owner() == ownerID) {
		return nil
	}
	return domain.Errorf(domain.Forbidden, "revoking another owner's token requires the admin role")
}
