package app

import (
	"context"
	"time"

	"github.com/clientele/clientele/commands/imports"
	"github.com/clientele/clientele/domain/access"
)

// Uploads stages uploads; imports.StageUploadHandler implements it.
type Uploads interface {
	Handle(ctx context.Context, cmd imports.StageUpload) (imports.StagedUpload, error)
}

// DataQueries runs data queries; imports.RunDataQueryHandler implements
// it.
type DataQueries interface {
	Handle(ctx context.Context, cmd imports.RunDataQuery) (imports.DataQueryResult, error)
}

// Authenticator authenticates principals; authn.Authenticator implements
// it.
type Authenticator interface {
	// AuthenticateToken returns the principal of an access token of the
	// company, or a domain.Unauthorized error.
	AuthenticateToken(ctx context.Context, companyID, token string) (access.Principal, error)
	// AuthenticatePassword returns the principal of a user of the company
	// (Principal.Password set), checking the TOTP code when the user has
	// two-factor authentication, or a domain.Unauthorized error.
	AuthenticatePassword(ctx context.Context, companyID, email, password, totpCode string) (access.Principal, error)
	// Recheck returns the principal that a principal's credential (its
	// token, or its user) gives now, or a domain.Unauthorized error once
	// the token is revoked or the user removed: the edges check it again
	// at each effect of a long session.
	Recheck(ctx context.Context, p access.Principal) (access.Principal, error)
}

// Sessions are the console's log-ins; authn.ConsoleSessions implements
// it.
type Sessions interface {
	// Create starts a session of the user, who has roles now, and returns
	// its value.
	Create(ctx context.Context, companyID, userID string, roles []access.Role) (string, error)
	// Lookup returns the user of a live session within the company, as
	// they are now, or a domain.NotFound error (no such session, or its
	// user removed); a session whose user lost a role they had at its
	// log-in ends, a domain.Unauthorized error.
	Lookup(ctx context.Context, companyID, token string) (access.User, error)
	// Revoke ends a session.
	Revoke(ctx context.Context, companyID, token string) error
	// Lifetime is how long a session lasts, from its log-in.
	Lifetime() time.Duration
}
