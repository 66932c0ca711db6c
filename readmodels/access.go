package readmodels

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/clientele/clientele/domain"
	"github.com/clientele/clientele/domain/access"
)

// Access reads users, integrations and access tokens (never a token's
// value: only its hash is stored).
type Access struct {
	db database
}

// NewAccess returns the queries on pool.
func NewAccess(pool *pgxpool.Pool) *Access {
	if pool == nil {
		panic("readmodels: NewAccess: nil pool")
	}
	return &Access{db: database{pool}}
}

const selectToken = `SELECT t.company_id, t.id, t.owner_id, t.hint, t.name, t.created_by, t.created_at,
	t.transferred_roles, t.scopes FROM access_tokens t `

// AccessTokenByHash returns the token of the company whose value hashes
// to hash (secret.HashToken), or a domain.NotFound error. A token owned
// by a disabled integration is not found: it no longer authenticates
// (authn.Authenticator.AuthenticateToken). It is one lookup by the unique
// index on the hash.
func (q *Access) AccessTokenByHash(ctx context.Context, companyID, hash string) (access.AccessToken, error) {
	rows, err := q.db.Query(ctx, selectToken+`
		LEFT JOIN integrations i ON t.owner_id LIKE 'integrations/%' AND i.company_id = t.company_id
			AND i.id = substr(t.owner_id, length('integrations/') + 1)
		WHERE t.token_hash = $1 AND t.company_id = $2 AND i.enabled IS NOT FALSE`, hash, companyID)
	if err != nil {
		return access.AccessToken{}, fmt.Errorf("readmodels: access token by hash: %w", err)
	}
	t, err := pgx.CollectExactlyOneRow(rows, scanToken)
	if errors.Is(err, pgx.ErrNoRows) {
		return access.AccessToken{}, domain.Errorf(domain.NotFound, "no such access token")
	}
	if err != nil {
		return access.AccessToken{}, fmt.Errorf("readmodels: access token by hash: %w", err)
	}
	return t, nil
}

// AccessToken returns a token of the company (never its value).
func (q *Access) AccessToken(ctx context.Context, companyID, id string) (access.AccessToken, error) {
	rows, err := q.db.Query(ctx, selectToken+`WHERE t.company_id = $1 AND t.id = $2`, companyID, id)
	if err != nil {
		return access.AccessToken{}, fmt.Errorf("readmodels: access token: %w", err)
	}
	t, err := pgx.CollectExactlyOneRow(rows, scanToken)
	if errors.Is(err, pgx.ErrNoRows) {
		return access.AccessToken{}, domain.Errorf(domain.NotFound, "no such access token")
	}
	if err != nil {
		return access.AccessToken{}, fmt.Errorf("readmodels: access token: %w", err)
	}
	return t, nil
}

func scanToken(row pgx.CollectableRow) (access.AccessToken, error) {
	var t access.AccessToken
	var roles []string
	var scopes []byte
	if err := row.Scan(&t.CompanyID, &t.ID, &t.OwnerID, &t.Hint, &t.Name, &t.CreatedBy, &t.CreatedAt, &roles, &scopes); err != nil {
		return t, err
	}
	t.CreatedAt = t.CreatedAt.UTC()
	t.TransferredRoles = toRoles(roles)
	if err := json.Unmarshal(scopes, &t.Scopes); err != nil {
		return t, fmt.Errorf("scopes of token %s: %w", t.ID, err)
	}
	return t, nil
}

func toRoles(s []string) []access.Role {
	roles := make([]access.Role, len(s))
	for i, r := range s {
		roles[i] = access.Role(r)
	}
	return roles
}

const selectUser = `SELECT company_id, id, email, roles, password_hash, totp_secret, created_at FROM users `

// User returns a user of the company, with its credentials' hashes.
func (q *Access) User(ctx context.Context, companyID, id string) (access.User, error) {
	return q.user(ctx, `WHERE company_id = $1 AND id = $2`, companyID, id)
}

// UserByEmail returns the user of the company with email, compared as
// access.EmailKey (case and surrounding spaces ignored).
func (q *Access) UserByEmail(ctx context.Context, companyID, email string) (access.User, error) {
	return q.user(ctx, `WHERE company_id = $1 AND email = $2`, companyID, access.EmailKey(email))
}

func (q *Access) user(ctx context.Context, where string, args ...any) (access.User, error) {
	rows, err := q.db.Query(ctx, selectUser+where, args...)
	if err != nil {
		return access.User{}, fmt.Errorf("readmodels: user: %w", err)
	}
	u, err := pgx.CollectExactlyOneRow(rows, func(row pgx.CollectableRow) (access.User, error) {
		var u access.User
		var roles []string
		err := row.Scan(&u.CompanyID, &u.ID, &u.Email, &roles, &u.PasswordHash, &u.TOTPSecret, &u.CreatedAt)
		u.Roles = toRoles(roles)
		u.CreatedAt = u.CreatedAt.UTC()
		return u, err
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return access.User{}, domain.Errorf(domain.NotFound, "no such user")
	}
	if err != nil {
		return access.User{}, fmt.Errorf("readmodels: user: %w", err)
	}
	return u, nil
}

const selectIntegration = `SELECT company_id, id, name, integration_name, description, enabled, created_at, created_by FROM integrations `

// Integration returns an integration of the company.
func (q *Access) Integration(ctx context.Context, companyID, id string) (access.Integration, error) {
	rows, err := q.db.Query(ctx, selectIntegration+`WHERE company_id = $1 AND id = $2`, companyID, id)
	if err != nil {
		return access.Integration{}, fmt.Errorf("readmodels: integration: %w", err)
	}
	i, err := pgx.CollectExactlyOneRow(rows, scanIntegration)
	if errors.Is(err, pgx.ErrNoRows) {
		return access.Integration{}, domain.Errorf(domain.NotFound, "no such integration")
	}
	if err != nil {
		return access.Integration{}, fmt.Errorf("readmodels: integration: %w", err)
	}
	return i, nil
}

// Integrations returns the integrations of the company, oldest first.
func (q *Access) Integrations(ctx context.Context, companyID string) ([]access.Integration, error) {
	rows, err := q.db.Query(ctx, selectIntegration+`WHERE company_id = $1 ORDER BY created_at, id`, companyID)
	if err != nil {
		return nil, fmt.Errorf("readmodels: integrations: %w", err)
	}
	is, err := pgx.CollectRows(rows, scanIntegration)
	if err != nil {
		return nil, fmt.Errorf("readmodels: integrations: %w", err)
	}
	return is, nil
}

func scanIntegration(row pgx.CollectableRow) (access.Integration, error) {
	var i access.Integration
	err := row.Scan(&i.CompanyID, &i.ID, &i.Name, &i.IntegrationName, &i.Description, &i.Enabled, &i.CreatedAt, &i.CreatedBy)
	i.CreatedAt = i.CreatedAt.UTC()
	return i, err
}
