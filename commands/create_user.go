package commands

import (
	"context"
	"fmt"
	"time"

	"github.com/clientele/clientele/domain"
	"github.com/clientele/clientele/domain/access"
	"github.com/clientele/clientele/eventstore"
	"github.com/clientele/clientele/internal/secret"
)

// CreateUser creates a user of the principal's company. The system and
// admins create users; see access.NewUser.
type CreateUser struct {
	Principal access.Principal
	Email     string
	Password  string
	Roles     []access.Role
	// TOTP turns on two-factor authentication: a secret is generated and
	// returned once.
	TOTP bool
}

// CreatedUser is the result of CreateUser. TOTPSecret and TOTPURI (an
// otpauth:// URI for authenticator apps) are set when TOTP was asked for;
// show them to the user once.
type CreatedUser struct {
	User       access.User
	TOTPSecret string
	TOTPURI    string
}

// CreateUserHandler handles CreateUser.
type CreateUserHandler struct {
	store eventstore.Store
	now   func() time.Time
}

// NewCreateUserHandler returns a handler on store.
func NewCreateUserHandler(store eventstore.Store, now func() time.Time) CreateUserHandler {
	if store == nil || now == nil {
		panic("commands: NewCreateUserHandler: nil dependency")
	}
	return CreateUserHandler{store: store, now: now}
}

// TOTPIssuer is the issuer shown by authenticator apps.
const TOTPIssuer = "Clientele"

// Handle creates the user. The email is reserved within the company in the
// same commit: a taken email is a Conflict.
func (h CreateUserHandler) Handle(ctx context.Context, cmd CreateUser) (CreatedUser, error) {
	p := cmd.Principal
	if err := RequireCompany(p); err != nil {
		return CreatedUser{}, err
	}
	if !p.HasRole(access.RoleAdmin) {
		return CreatedUser{}, domain.Errorf(domain.Forbidden, "creating a user requires the admin role")
	}
	if err := access.ValidatePassword(cmd.Password); err != nil {
		return CreatedUser{}, err
	}
	email, err := access.NormalizeEmail(cmd.Email)
	if err != nil {
		return CreatedUser{}, err
	}
	c, _, err := loadCompany(ctx, h.store, p.CompanyID)
	if err != nil {
		return CreatedUser{}, err
	}
	var out CreatedUser
	if cmd.TOTP {
		out.TOTPSecret, out.TOTPURI, err = secret.NewTOTP(TOTPIssuer, fmt.Sprintf("%s (%s)", email, c.Slug))
		if err != nil {
			return CreatedUser{}, err
		}
	}
	hash, err := secret.HashPassword(cmd.Password)
	if err != nil {
		return CreatedUser{}, err
	}
	u, err := access.NewUser(p, NewID(), email, cmd.Roles, hash, out.TOTPSecret, stamp(h.now()))
	if err != nil {
		return CreatedUser{}, err
	}
	out.User = u
	emailStream := access.UserEmailStream(p.CompanyID, u.Email)
	_, err = h.store.Append(ctx, eventstore.Commit{
		Metadata: Metadata(ctx, p, p.CompanyID),
		Streams: []eventstore.StreamAppend{
			{StreamID: access.UserStream(p.CompanyID, u.ID), ExpectedVersion: eventstore.NoStream, Events: []eventstore.Event{eventstore.NewEvent(access.UserCreatedType, access.NewUserCreated(u))}},
			{StreamID: emailStream, ExpectedVersion: eventstore.NoStream, Events: []eventstore.Event{eventstore.NewEvent(access.UserEmailReservedType, access.UserEmailReserved{Email: u.Email, UserID: u.ID})}},
		},
	})
	switch {
	case err == nil:
		return out, nil
	case conflictOn(err, emailStream):
		return CreatedUser{}, domain.Errorf(domain.Conflict, "a user with email %s already exists", u.Email)
	}
	return CreatedUser{}, appendError(err)
}
