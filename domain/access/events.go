package access

import "time"

// Event type names, as stored in the event log. They are durable: never
// rename one.
const (
	UserCreatedType        = "UserCreated"
	UserEmailReservedType  = "UserEmailReserved"
	IntegrationCreatedType = "IntegrationCreated"
	AccessTokenCreatedType = "AccessTokenCreated"
)

// UserCreated starts a user's stream.
type UserCreated struct {
	ID    string `json:"id"`
	Email string `json:"email"`
	Roles []Role `json:"roles"`
	// PasswordHash is the argon2id hash; the password itself is never
	// recorded.
	PasswordHash string    `json:"password_hash"`
	TOTPSecret   string    `json:"totp_secret,omitempty"`
	CreatedAt    time.Time `json:"created_at"`
}

// NewUserCreated returns the event that records u.
func NewUserCreated(u User) UserCreated {
	return UserCreated{ID: u.ID, Email: u.Email, Roles: u.Roles, PasswordHash: u.PasswordHash, TOTPSecret: u.TOTPSecret, CreatedAt: u.CreatedAt}
}

// User returns the user the event creates in companyID.
func (e UserCreated) User(companyID string) User {
	return User{ID: e.ID, CompanyID: companyID, Email: e.Email, Roles: e.Roles, PasswordHash: e.PasswordHash, TOTPSecret: e.TOTPSecret, CreatedAt: e.CreatedAt}
}

// UserEmailReserved claims an email address within a company; it is the
// only event of the stream that makes emails unique.
type UserEmailReserved struct {
	Email  string `json:"email"`
	UserID string `json:"user_id"`
}

// IntegrationCreated starts an integration's stream.
type IntegrationCreated struct {
	ID              string    `json:"id"`
	Name            string    `json:"name"`
	IntegrationName string    `json:"integration_name"`
	Description     string    `json:"description"`
	Enabled         bool      `json:"enabled"`
	CreatedAt       time.Time `json:"created_at"`
	CreatedBy       string    `json:"created_by"`
}

// NewIntegrationCreated returns the event that records i.
func NewIntegrationCreated(i Integration) IntegrationCreated {
	return IntegrationCreated{ID: i.ID, Name: i.Name, IntegrationName: i.IntegrationName, Description: i.Description, Enabled: i.Enabled, CreatedAt: i.CreatedAt, CreatedBy: i.CreatedBy}
}

// Integration returns the integration the event creates in companyID.
func (e IntegrationCreated) Integration(companyID string) Integration {
	return Integration{ID: e.ID, CompanyID: companyID, Name: e.Name, IntegrationName: e.IntegrationName, Description: e.Description, Enabled: e.Enabled, CreatedAt: e.CreatedAt, CreatedBy: e.CreatedBy}
}

// AccessTokenCreated starts an access token's stream. It carries the
// SHA-256 hash of the value (hex), never the value.
type AccessTokenCreated struct {
	ID               string    `json:"id"`
	OwnerID          string    `json:"owner_id"`
	Hint             string    `json:"hint"`
	Name             string    `json:"name"`
	CreatedBy        string    `json:"created_by"`
	CreatedAt        time.Time `json:"created_at"`
	TransferredRoles []Role    `json:"transferred_roles"`
	Scopes           []Scope   `json:"scopes"`
	TokenHash        string    `json:"token_hash"`
}

// NewAccessTokenCreated returns the event that records t, whose value
// hashes to tokenHash.
func NewAccessTokenCreated(t AccessToken, tokenHash string) AccessTokenCreated {
	return AccessTokenCreated{ID: t.ID, OwnerID: t.OwnerID, Hint: t.Hint, Name: t.Name, CreatedBy: t.CreatedBy, CreatedAt: t.CreatedAt, TransferredRoles: t.TransferredRoles, Scopes: t.Scopes, TokenHash: tokenHash}
}

// AccessToken returns the token the event creates in companyID.
func (e AccessTokenCreated) AccessToken(companyID string) AccessToken {
	return AccessToken{ID: e.ID, CompanyID: companyID, OwnerID: e.OwnerID, Hint: e.Hint, Name: e.Name, CreatedBy: e.CreatedBy, CreatedAt: e.CreatedAt, TransferredRoles: e.TransferredRoles, Scopes: e.Scopes}
}
