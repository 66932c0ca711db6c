package commands

import (
	"context"
	"time"

	"github.com/clientele/clientele/domain"
	"github.com/clientele/clientele/domain/access"
	"github.com/clientele/clientele/eventstore"
	"github.com/clientele/clientele/internal/secret"
)

// CreateAccessToken creates an access token in the principal's company.
// See access.NewAccessToken for who may create which token.
type CreateAccessToken struct {
	Principal access.Principal
	Name      string
	// OwnerID is "integrations/<id>", "users/<id>", or "" for the
	// principal's own user.
	OwnerID            string
	Scopes             []access.Scope
	TransferPrivileges bool
}

// CreateAccessTokenHandler handles CreateAccessToken.
type CreateAccessTokenHandler struct {
	store eventstore.Store
	now   func() time.Time
}

// NewCreateAccessTokenHandler returns a handler on store.
func NewCreateAccessTokenHandler(store eventstore.Store, now func() time.Time) CreateAccessTokenHandler {
	if store == nil || now == nil {
		panic("commands: NewCreateAccessTokenHandler: nil dependency")
	}
	return CreateAccessTokenHandler{store: store, now: now}
}

// Handle creates the token and returns it with its secret value. The value
// is returned only here: the event records its SHA-256 hash.
func (h CreateAccessTokenHandler) Handle(ctx context.Context, cmd CreateAccessToken) (access.AccessToken, string, error) {
	p := cmd.Principal
	if err := RequireCompany(p); err != nil {
		return access.AccessToken{}, "", err
	}
	if err := checkSystemCompany(ctx, h.store, p); err != nil {
		return access.AccessToken{}, "", err
	}
	value := access.NewTokenValue()
	t, err := access.NewAccessToken(p, access.TokenRequest{
		Name: cmd.Name, OwnerID: cmd.OwnerID, Scopes: cmd.Scopes, TransferPrivileges: cmd.TransferPrivileges,
	}, NewID(), value, stamp(h.now()))
	if err != nil {
		return access.AccessToken{}, "", err
	}
	if err := h.checkOwner(ctx, p, t.OwnerID); err != nil {
		return access.AccessToken{}, "", err
	}
	_, err = h.store.Append(ctx, eventstore.Commit{
		Metadata: Metadata(ctx, p, p.CompanyID),
		Streams: []eventstore.StreamAppend{{
			StreamID: access.TokenStream(p.CompanyID, t.ID), ExpectedVersion: eventstore.NoStream,
			Events: []eventstore.Event{eventstore.NewEvent(access.AccessTokenCreatedType, access.NewAccessTokenCreated(t, secret.HashToken(value)))},
		}},
	})
	if err != nil {
		return access.AccessToken{}, "", appendError(err)
	}
	return t, value, nil
}

// checkOwner makes sure the token's owner exists in the company. The
// principal's own user exists: it just authenticated.
func (h CreateAccessTokenHandler) checkOwner(ctx context.Context, p access.Principal, ownerID string) error {
	owner, err := access.ParseOwnerID(ownerID)
	if err != nil {
		return err
	}
	var stream string
	switch {
	case owner.Kind == access.OwnerUser && owner.ID == p.UserID:
		return nil
	case owner.Kind == access.OwnerUser:
		stream = access.UserStream(p.CompanyID, owner.ID)
	default:
		stream = access.IntegrationStream(p.CompanyID, owner.ID)
	}
	evs, err := h.store.ReadStream(ctx, stream, 0)
	if err != nil {
		return err
	}
	if len(evs) == 0 {
		return domain.Errorf(domain.Validation, "owner_id: no such owner %s", ownerID)
	}
	return nil
}
