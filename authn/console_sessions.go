package authn

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/clientele/clientele/domain"
	"github.com/clientele/clientele/domain/access"
	"github.com/clientele/clientele/internal/secret"
	"github.com/clientele/clientele/storeerr"
)

// ConsoleSessions are the log-ins of the web console (package console):
// a session is a row of console_sessions (migration 00028), named by a
// random value that only the browser's cookie holds; the table keeps its
// SHA-256. A table rather than a signed cookie, because a log-out must end
// the session for good, on every node, and a user's removal must end its
// sessions: a signed cookie stays valid until it expires, wherever it was
// copied to. Like the TOTP steps of Authenticator, this is state of
// authentication that is written outside the event store; its errors are
// typed as every read model's (storeerr.Translate).
type ConsoleSessions struct {
	pool *pgxpool.Pool
	// users is where a session's user is read, with their roles now.
	users Credentials
	// TTL is how long a session lasts, from its log-in.
	TTL time.Duration
	// Now is the clock of sessions.
	Now func() time.Time
}

// NewConsoleSessions returns the sessions on pool, each lasting ttl, of
// the users of creds.
func NewConsoleSessions(pool *pgxpool.Pool, creds Credentials, ttl time.Duration) *ConsoleSessions {
	if pool == nil || creds == nil {
		panic("authn: NewConsoleSessions: nil pool or credentials")
	}
	return &ConsoleSessions{pool: pool, users: creds, TTL: ttl, Now: time.Now}
}

// DefaultSessionTTL is how long a console log-in lasts.
const DefaultSessionTTL = 12 * time.Hour

// Lifetime is how long a session lasts, from its log-in (TTL): the
// console's cookie lasts as long.
func (s *ConsoleSessions) Lifetime() time.Duration { return s.TTL }

// Create starts a session of the user, who has roles now, and returns
// its value.
func (s *ConsoleSessions) Create(ctx context.Context, companyID, userID string, roles []access.Role) (string, error) {
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return "", err
	}
	token := base64.RawURLEncoding.EncodeToString(raw)
	now := s.Now()
	// Expired sessions are cleared at log-ins, which are limited: the
	// table holds about the sessions of one TTL.
	if _, err := s.pool.Exec(ctx, `DELETE FROM console_sessions WHERE expires_at <= $1`, now); err != nil {
		return "", fmt.Errorf("authn: clear expired console sessions: %w", storeerr.Translate(err))
	}
	hash := secret.HashToken(token)
	_, err := s.pool.Exec(ctx, `INSERT INTO console_sessions (token_hash, company_id, user_id, created_at, expires_at, roles)
		VALUES ($1, $2, $3, $4, $5, $6)`, hash, companyID, userID, now, now.Add(s.TTL), roles)
	if err != nil {
		return "", fmt.Errorf("authn: create console session: %w", storeerr.Translate(err))
	}
	// Successful log-ins are not limited as failed ones are: without a
	// bound, a user (or a script with its password) logging in again and
	// again would grow the table without limit within one TTL. A log-in
	// beyond access.MaxConsoleSessionsPerUser ends the user's oldest sessions.
	_, err = s.pool.Exec(ctx, `DELETE FROM console_sessions WHERE token_hash IN (
			SELECT token_hash FROM console_sessions
			WHERE company_id = $1 AND user_id = $2 AND token_hash <> $3
			ORDER BY created_at DESC, token_hash OFFSET $4)`, companyID, userID, hash, access.MaxConsoleSessionsPerUser-1)
	if err != nil {
		return "", fmt.Errorf("authn: end a user's oldest console sessions: %w", storeerr.Translate(err))
	}
	return token, nil
}

// Lookup returns the user of a live session within the company, with
// the roles they have now, or a domain.NotFound error: a session of
// another company (a cookie carried to another host) is no session here,
// and one of a user removed is none any more. A session whose user has
// lost a role they had at its log-in is ended (access.KeepsRoles): a
// domain.Unauthorized error.
func (s *ConsoleSessions) Lookup(ctx context.Context, companyID, token string) (access.User, error) {
	var userID string
	var had []access.Role
	err := s.pool.QueryRow(ctx, `SELECT user_id, roles FROM console_sessions
		WHERE token_hash = $1 AND company_id = $2 AND expires_at > $3`,
		secret.HashToken(token), companyID, s.Now()).Scan(&userID, &had)
	if errors.Is(err, pgx.ErrNoRows) {
		return access.User{}, errNoSession()
	}
	if err != nil {
		return access.User{}, fmt.Errorf("authn: console session: %w", storeerr.Translate(err))
	}
	u, err := s.users.User(ctx, companyID, userID)
	if domain.ErrorCode(err) == domain.NotFound {
		return access.User{}, errNoSession()
	}
	if err != nil {
		return access.User{}, fmt.Errorf("authn: console session: %w", err)
	}
	if had == nil || !access.KeepsRoles(had, u.Roles) {
		if err := s.Revoke(ctx, companyID, token); err != nil {
			return access.User{}, err
		}
		return access.User{}, errRolesChanged()
	}
	return u, nil
}

func errNoSession() error { return domain.Errorf(domain.NotFound, "no such session") }

// Revoke ends a session.
func (s *ConsoleSessions) Revoke(ctx context.Context, companyID, token string) error {
	_, err := s.pool.Exec(ctx, `DELETE FROM console_sessions WHERE token_hash = $1 AND company_id = $2`,
		secret.HashToken(token), companyID)
	if err != nil {
		return fmt.Errorf("authn: end console session: %w", storeerr.Translate(err))
	}
	return nil
}
