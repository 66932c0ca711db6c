// Package authn is authentication: who a request comes from. It turns
// an access token, a user's email, password and TOTP code, or a console
// session's value into an access.Principal or a user, and keeps the
// state of authentication that is not in the event store: the TOTP steps
// already used (totp_steps) and the console's sessions
// (console_sessions). It is a package of its own because it is neither
// of the two sides around it: it writes, so it is no read model, and
// what it writes is no fact of the log (a log-in is no event, a used
// code must be refused at once on every node), so it is no command
// either. The users and tokens it checks against are read models
// (Credentials, which readmodels.Access implements); the answers to
// failures are access.InvalidToken and access.InvalidLogIn. Its
// database errors are typed as every read model's (storeerr.Translate).
package authn

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/clientele/clientele/domain"
	"github.com/clientele/clientele/domain/access"
	"github.com/clientele/clientele/internal/secret"
	"github.com/clientele/clientele/storeerr"
)

// Credentials reads what principals are checked against;
// readmodels.Access implements it.
type Credentials interface {
	// AccessTokenByHash returns the token of the company whose value
	// hashes to hash (secret.HashToken), or a domain.NotFound error when
	// there is none or it no longer authenticates.
	AccessTokenByHash(ctx context.Context, companyID, hash string) (access.AccessToken, error)
	// UserByEmail returns the user of the company with email, with its
	// credentials' hashes, or a domain.NotFound error.
	UserByEmail(ctx context.Context, companyID, email string) (access.User, error)
	// AccessToken returns a token of the company by its id, or a
	// domain.NotFound error once it is revoked (Recheck).
	AccessToken(ctx context.Context, companyID, id string) (access.AccessToken, error)
	// Integration returns an integration of the company, or a
	// domain.NotFound error (Recheck).
	Integration(ctx context.Context, companyID, id string) (access.Integration, error)
	// User returns a user of the company, or a domain.NotFound error once
	// it is removed (Recheck).
	User(ctx context.Context, companyID, id string) (access.User, error)
}

// Authenticator authenticates access tokens and users' passwords.
type Authenticator struct {
	pool  *pgxpool.Pool
	creds Credentials
	// Now is the clock TOTP codes are checked against.
	Now func() time.Time
}

// New returns the authenticator that checks against creds and records
// the TOTP steps used on pool.
func New(pool *pgxpool.Pool, creds Credentials) *Authenticator {
	if pool == nil || creds == nil {
		panic("authn: New: nil pool or credentials")
	}
	return &Authenticator{pool: pool, creds: creds, Now: time.Now}
}

// AuthenticateToken returns the principal of a request to companyID that
// carries token. An unknown token, a token of another company, or one
// owned by a disabled integration is access.InvalidToken. It is one
// lookup by the unique index on the token's hash.
func (a *Authenticator) AuthenticateToken(ctx context.Context, companyID, token string) (access.Principal, error) {
	token = strings.TrimSpace(token)
	if !access.LooksLikeToken(token) {
		return access.Principal{}, access.InvalidToken()
	}
	t, err := a.creds.AccessTokenByHash(ctx, companyID, secret.HashToken(token))
	if domain.ErrorCode(err) == domain.NotFound {
		return access.Principal{}, access.InvalidToken()
	}
	if err != nil {
		return access.Principal{}, fmt.Errorf("authn: authenticate token: %w", err)
	}
	return t.Principal(), nil
}

// AuthenticatePassword returns the principal of a user of companyID who
// signs in with email and password (HTTP basic), and totpCode (the
// Clientele-TOTP-Code header) when the user has TOTP on. Every failure is
// the same access.InvalidLogIn, and an unknown user costs the same
// password check as a known one.
//
// A TOTP code is accepted once: its time step must be later than the
// last one accepted for the user (totp_steps). The code is checked only
// after the password, so a wrong password never uses up a code.
func (a *Authenticator) AuthenticatePassword(ctx context.Context, companyID, email, password, totpCode string) (access.Principal, error) {
	u, err := a.creds.UserByEmail(ctx, companyID, email)
	if err != nil && domain.ErrorCode(err) != domain.NotFound {
		return access.Principal{}, err
	}
	// On NotFound u.PasswordHash is "": CheckPassword still does the work.
	if !secret.CheckPassword(password, u.PasswordHash) {
		return access.Principal{}, access.InvalidLogIn()
	}
	if u.TOTPSecret != "" {
		step, ok := secret.TOTPStep(strings.TrimSpace(totpCode), u.TOTPSecret, a.Now())
		if !ok {
			return access.Principal{}, access.InvalidLogIn()
		}
		fresh, err := a.useTOTPStep(ctx, u, step)
		if err != nil {
			return access.Principal{}, err
		}
		if !fresh {
			return access.Principal{}, access.InvalidLogIn()
		}
	}
	p := u.Principal()
	p.Password = true
	return p, nil
}

// useTOTPStep records step as the user's last accepted TOTP step, unless
// that step or a later one was accepted already (by any node): the check
// and the write are one statement, so two log-ins racing with one code
// get one success.
func (a *Authenticator) useTOTPStep(ctx context.Context, u access.User, step int64) (bool, error) {
	tag, err := a.pool.Exec(ctx, `INSERT INTO totp_steps (company_id, user_id, step) VALUES ($1, $2, $3)
		ON CONFLICT (company_id, user_id) DO UPDATE SET step = excluded.step WHERE totp_steps.step < excluded.step`,
		u.CompanyID, u.ID, step)
	if err != nil {
		return false, fmt.Errorf("authn: use TOTP step: %w", storeerr.Translate(err))
	}
	return tag.RowsAffected() == 1, nil
}

// Recheck returns the principal that p's credential gives now, for the
// edges that act long after a log-in (an SFTP connection, its queued
// files, a streamed answer): authority is checked at the moment of each
// effect, not only when the credential was shown. A revoked token, or
// one of an integration since disabled, is access.InvalidToken; a user
// no longer there is access.InvalidLogIn; a user who no longer has a
// role that p had is a domain.Unauthorized error too (what was opened
// with more authority ends; a new log-in has what the user has now). A
// token's roles and scopes are fixed at its creation, so its principal
// is the one AuthenticateToken gave. p.System passes unchecked. A
// principal of an SFTP key is no token's or user's and is checked by the
// SFTP server against its keys; here it is refused.
func (a *Authenticator) Recheck(ctx context.Context, p access.Principal) (access.Principal, error) {
	switch {
	case p.System:
		return p, nil
	case p.TokenID != "":
		t, err := a.creds.AccessToken(ctx, p.CompanyID, p.TokenID)
		if domain.ErrorCode(err) == domain.NotFound {
			return access.Principal{}, access.InvalidToken()
		}
		if err != nil {
			return access.Principal{}, fmt.Errorf("authn: recheck token: %w", err)
		}
		// As AccessTokenByHash: a token of a disabled integration no
		// longer authenticates.
		if o, err := access.ParseOwnerID(t.OwnerID); err == nil && o.Kind == access.OwnerIntegration {
			in, err := a.creds.Integration(ctx, p.CompanyID, o.ID)
			if domain.ErrorCode(err) == domain.NotFound {
				return access.Principal{}, access.InvalidToken()
			}
			if err != nil {
				return access.Principal{}, fmt.Errorf("authn: recheck token: %w", err)
			}
			if !in.Enabled {
				return access.Principal{}, access.InvalidToken()
			}
		}
		return t.Principal(), nil
	case p.UserID != "" && p.SFTPKeyID == "":
		u, err := a.creds.User(ctx, p.CompanyID, p.UserID)
		if domain.ErrorCode(err) == domain.NotFound {
			return access.Principal{}, access.InvalidLogIn()
		}
		if err != nil {
			return access.Principal{}, fmt.Errorf("authn: recheck user: %w", err)
		}
		out := u.Principal()
		out.Password = p.Password
		if !access.KeepsRoles(p.Roles, out.Roles) {
			return access.Principal{}, errRolesChanged()
		}
		return out, nil
	}
	return access.Principal{}, access.InvalidToken()
}

// errRolesChanged ends what a user opened with a role they no longer have.
func errRolesChanged() error {
	return domain.Errorf(domain.Unauthorized, "this user's roles changed; log in again")
}
