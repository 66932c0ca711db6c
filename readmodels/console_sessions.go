package readmodels

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
	"github.com/clientele/clientele/internal/secret"
)

// ConsoleSessions are the log-ins of the web console (package console):
// a session is a row of console_sessions (migration 00028), named by a
// random value that only the browser's cookie holds; the table keeps its
// SHA-256. A table rather than a signed cookie, because a log-out must end
// the session for good, on every node, and a user's removal must end its
// sessions: a signed cookie stays valid until it expires, wherever it was
// copied to. Like the TOTP steps of Access, this is state of
// authentication that is written outside the event store; it reaches
// PostgreSQL through database (db.go), so its errors are typed as every
// read model's.
type ConsoleSessions struct {
	db database
	// TTL is how long a session lasts, from its log-in.
	TTL time.Duration
	// Now is the clock of sessions.
	Now func() time.Time
}

// NewConsoleSessions returns the sessions on pool, each lasting ttl.
func NewConsoleSessions(pool *pgxpool.Pool, ttl time.Duration) *ConsoleSessions {
	if pool == nil {
		panic("readmodels: NewConsoleSessions: nil pool")
	}
	return &ConsoleSessions{db: database{pool}, TTL: ttl, Now: time.Now}
}

// MaxConsoleSessionsPerUser bounds a user's live sessions (a browser
// each), so that the table holds at most this many rows per user besides
// the expired rows of one TTL.
const MaxConsoleSessionsPerUser = 10

// ConsoleSessionLength is the length of a session value (32 random bytes
// in unpadded base64url): a value of another length is no session, and
// need not be looked up.
const ConsoleSessionLength = 43

// Create starts a session of the user and returns its value.
func (s *ConsoleSessions) Create(ctx context.Context, companyID, userID string) (string, error) {
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return "", err
	}
	token := base64.RawURLEncoding.EncodeToString(raw)
	now := s.Now()
	// Expired sessions are cleared at log-ins, which are limited: the
	// table holds about the sessions of one TTL.
	if _, err := s.db.Exec(ctx, `DELETE FROM console_sessions WHERE expires_at <= $1`, now); err != nil {
		return "", fmt.Errorf("readmodels: clear expired console sessions: %w", err)
	}
	hash := secret.HashToken(token)
	_, err := s.db.Exec(ctx, `INSERT INTO console_sessions (token_hash, company_id, user_id, created_at, expires_at)
		VALUES ($1, $2, $3, $4, $5)`, hash, companyID, userID, now, now.Add(s.TTL))
	if err != nil {
		return "", fmt.Errorf("readmodels: create console session: %w", err)
	}
	// Successful log-ins are not limited as failed ones are: without a
	// bound, a user (or a script with its password) logging in again and
	// again would grow the table without limit within one TTL. A log-in
	// beyond MaxConsoleSessionsPerUser ends the user's oldest sessions.
	_, err = s.db.Exec(ctx, `DELETE FROM console_sessions WHERE token_hash IN (
			SELECT token_hash FROM console_sessions
			WHERE company_id = $1 AND user_id = $2 AND token_hash <> $3
			ORDER BY created_at DESC, token_hash OFFSET $4)`, companyID, userID, hash, MaxConsoleSessionsPerUser-1)
	if err != nil {
		return "", fmt.Errorf("readmodels: end a user's oldest console sessions: %w", err)
	}
	return token, nil
}

// Lookup returns the user of a live session within the company, or a
// domain.NotFound error: a session of another company (a cookie carried
// to another host) is no session here.
func (s *ConsoleSessions) Lookup(ctx context.Context, companyID, token string) (string, error) {
	var userID string
	err := s.db.QueryRow(ctx, `SELECT user_id FROM console_sessions
		WHERE token_hash = $1 AND company_id = $2 AND expires_at > $3`,
		secret.HashToken(token), companyID, s.Now()).Scan(&userID)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", domain.Errorf(domain.NotFound, "no such session")
	}
	if err != nil {
		return "", fmt.Errorf("readmodels: console session: %w", err)
	}
	return userID, nil
}

// Revoke ends a session.
func (s *ConsoleSessions) Revoke(ctx context.Context, companyID, token string) error {
	_, err := s.db.Exec(ctx, `DELETE FROM console_sessions WHERE token_hash = $1 AND company_id = $2`,
		secret.HashToken(token), companyID)
	if err != nil {
		return fmt.Errorf("readmodels: end console session: %w", err)
	}
	return nil
}
