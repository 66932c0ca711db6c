package console

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/clientele/clientele/internal/secret"
)

// A session is a row of console_sessions (migration 00028), named by a
// random value that only the browser's cookie holds; the table keeps its
// SHA-256. A table rather than a signed cookie, because a log-out must end
// the session for good, on every node, and a user's removal must end its
// sessions: a signed cookie stays valid until it expires, wherever it was
// copied to.
type sessions struct {
	pool *pgxpool.Pool
	ttl  time.Duration
	now  func() time.Time
}

// sessionCookie names the session cookie. It is host-only (no Domain), so
// the browser sends it to the company's host alone, and its path is the
// console's, so the API never sees it.
const sessionCookie = "clientele_console"

// create starts a session of the user and returns its value.
func (s *sessions) create(ctx context.Context, companyID, userID string) (string, error) {
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return "", err
	}
	token := base64.RawURLEncoding.EncodeToString(raw)
	now := s.now()
	// Expired sessions are cleared at log-ins, which are limited: the
	// table holds about the sessions of one TTL.
	if _, err := s.pool.Exec(ctx, `DELETE FROM console_sessions WHERE expires_at <= $1`, now); err != nil {
		return "", fmt.Errorf("console: clear expired sessions: %w", err)
	}
	hash := secret.HashToken(token)
	_, err := s.pool.Exec(ctx, `INSERT INTO console_sessions (token_hash, company_id, user_id, created_at, expires_at)
		VALUES ($1, $2, $3, $4, $5)`, hash, companyID, userID, now, now.Add(s.ttl))
	if err != nil {
		return "", fmt.Errorf("console: create session: %w", err)
	}
	// Successful log-ins are not limited as failed ones are: without a
	// bound, a user (or a script with its password) logging in again and
	// again would grow the table without limit within one TTL. A log-in
	// beyond maxSessionsPerUser ends the user's oldest sessions.
	_, err = s.pool.Exec(ctx, `DELETE FROM console_sessions WHERE token_hash IN (
			SELECT token_hash FROM console_sessions
			WHERE company_id = $1 AND user_id = $2 AND token_hash <> $3
			ORDER BY created_at DESC, token_hash OFFSET $4)`, companyID, userID, hash, maxSessionsPerUser-1)
	if err != nil {
		return "", fmt.Errorf("console: end a user's oldest sessions: %w", err)
	}
	return token, nil
}

// maxSessionsPerUser bounds a user's live sessions (a browser each), so
// that the table holds at most this many rows per user besides the
// expired rows of one TTL.
const maxSessionsPerUser = 10

// lookup returns the user of a live session within the company, or an
// Unauthorized error: a session of another company (a cookie carried to
// another host) is no session here.
func (s *sessions) lookup(ctx context.Context, companyID, token string) (string, error) {
	var userID string
	err := s.pool.QueryRow(ctx, `SELECT user_id FROM console_sessions
		WHERE token_hash = $1 AND company_id = $2 AND expires_at > $3`,
		secret.HashToken(token), companyID, s.now()).Scan(&userID)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", errLoggedOut()
	}
	if err != nil {
		return "", fmt.Errorf("console: session: %w", err)
	}
	return userID, nil
}

// revoke ends a session.
func (s *sessions) revoke(ctx context.Context, companyID, token string) error {
	_, err := s.pool.Exec(ctx, `DELETE FROM console_sessions WHERE token_hash = $1 AND company_id = $2`,
		secret.HashToken(token), companyID)
	if err != nil {
		return fmt.Errorf("console: end session: %w", err)
	}
	return nil
}

// sessionToken is the session value the request carries, "" for none.
func sessionToken(r *http.Request) string {
	ck, err := r.Cookie(sessionCookie)
	if err != nil {
		return ""
	}
	// A value the console made is 43 base64url characters; anything else
	// is no session, and is not looked up.
	if len(ck.Value) != 43 {
		return ""
	}
	return ck.Value
}

// secure reports whether the request came over TLS, to this server or to
// the proxy in front of it: the cookie is then marked Secure. Believing
// X-Forwarded-Proto from anyone is harmless: it can only make the
// client's own cookie stricter.
func secure(r *http.Request) bool {
	if r.TLS != nil {
		return true
	}
	proto, _, _ := strings.Cut(r.Header.Get("X-Forwarded-Proto"), ",")
	return strings.EqualFold(strings.TrimSpace(proto), "https")
}

func setSessionCookie(g *gin.Context, token string, ttl time.Duration) {
	http.SetCookie(g.Writer, &http.Cookie{
		Name: sessionCookie, Value: token, Path: Prefix + "/", MaxAge: int(ttl.Seconds()),
		HttpOnly: true, Secure: secure(g.Request), SameSite: http.SameSiteStrictMode,
	})
}

func clearSessionCookie(g *gin.Context) {
	http.SetCookie(g.Writer, &http.Cookie{
		Name: sessionCookie, Value: "", Path: Prefix + "/", MaxAge: -1,
		HttpOnly: true, Secure: secure(g.Request), SameSite: http.SameSiteStrictMode,
	})
}

func urlQueryEscape(s string) string { return url.QueryEscape(s) }
