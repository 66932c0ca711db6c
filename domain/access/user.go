package access

import (
	"net/mail"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/clientele/clientele/domain"
)

// User is a person who signs in with an email and a password (and, when
// TOTP is on, a six-digit code), usually only to create a first token.
type User struct {
	ID        string
	CompanyID string
	// Email is lower-case; it is unique within the company.
	Email string
	Roles []Role
	// PasswordHash is an argon2id hash in PHC string format.
	PasswordHash string
	// TOTPSecret is the base32 TOTP secret, empty when TOTP is off.
	TOTPSecret string
	CreatedAt  time.Time
}

// Principal returns the principal of a request made by u with a token of
// its own; the CLI uses it to act as the user.
func (u User) Principal() Principal {
	return Principal{CompanyID: u.CompanyID, UserID: u.ID, OwnerID: UserOwner(u.ID), Roles: u.Roles}
}

// Password length limits. The upper one bounds the hashing work an
// attacker can ask for.
const (
	MinPasswordLength = 10
	MaxPasswordLength = 1024
)

// ParseRole returns the role named s (case-insensitive).
func ParseRole(s string) (Role, error) {
	r := Role(strings.ToLower(strings.TrimSpace(s)))
	switch r {
	case RoleAdmin, RoleStaff, RoleSuperuser:
		return r, nil
	}
	return "", domain.Errorf(domain.Validation, "unknown role %q (admin, staff or superuser)", s)
}

// EmailKey is the form in which an email is stored and looked up:
// trimmed and lower-cased, so that " Ann@Example.com" and
// "ann@example.com" name one user. Whatever counts per user (log-in
// attempts) must use it too, or a variant of the address escapes the count.
func EmailKey(email string) string { return strings.ToLower(strings.TrimSpace(email)) }

// NormalizeEmail validates an email address and returns its EmailKey.
func NormalizeEmail(email string) (string, error) {
	e := EmailKey(email)
	a, err := mail.ParseAddress(e)
	if err != nil || a.Address != e || a.Name != "" || len(e) > 254 {
		return "", domain.Errorf(domain.Validation, "invalid email address %q", email)
	}
	return e, nil
}

// ValidatePassword checks a new password before it is hashed.
func ValidatePassword(password string) error {
	switch n := utf8.RuneCountInString(password); {
	case n < MinPasswordLength:
		return domain.Errorf(domain.Validation, "the password must have at least %d characters", MinPasswordLength)
	case len(password) > MaxPasswordLength:
		return domain.Errorf(domain.Validation, "the password must have at most %d bytes", MaxPasswordLength)
	}
	return nil
}

// NewUser decides whether p may create a user with roles and returns it.
// Only the system and admins create users, and only a superuser (or the
// system) grants superuser. Without roles the user is staff. The password
// must have been checked with ValidatePassword and hashed.
func NewUser(p Principal, id, email string, roles []Role, passwordHash, totpSecret string, now time.Time) (User, error) {
	if !p.HasRole(RoleAdmin) {
		return User{}, domain.Errorf(domain.Forbidden, "creating a user requires the admin role")
	}
	e, err := NormalizeEmail(email)
	if err != nil {
		return User{}, err
	}
	var rs []Role
	for _, r := range roles {
		r, err := ParseRole(string(r))
		if err != nil {
			return User{}, err
		}
		if !slices.Contains(rs, r) {
			rs = append(rs, r)
		}
	}
	if len(rs) == 0 {
		rs = []Role{RoleStaff}
	}
	if slices.Contains(rs, RoleSuperuser) && !p.System && !slices.Contains(p.Roles, RoleSuperuser) {
		return User{}, domain.Errorf(domain.Forbidden, "only a superuser can grant the superuser role")
	}
	if passwordHash == "" {
		return User{}, domain.Errorf(domain.Validation, "a password is required")
	}
	return User{
		ID: id, CompanyID: p.CompanyID, Email: e, Roles: rs,
		PasswordHash: passwordHash, TOTPSecret: totpSecret, CreatedAt: now.UTC(),
	}, nil
}
