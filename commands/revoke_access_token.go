package commands

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/clientele/clientele/domain"
	"github.com/clientele/clientele/domain/access"
	"github.com/clientele/clientele/eventstore"
)

// RevokeAccessToken revokes an access token of the principal's company.
// See access.MayRevokeAccessToken for who may.
type RevokeAccessToken struct {
	Principal access.Principal
	TokenID   string
}

// RevokeAccessTokenHandler handles RevokeAccessToken.
type RevokeAccessTokenHandler struct {
	store eventstore.Store
	now   func() time.Time
}

// NewRevokeAccessTokenHandler returns a handler on store.
func NewRevokeAccessTokenHandler(store eventstore.Store, now func() time.Time) RevokeAccessTokenHandler {
	if store == nil || now == nil {
		panic("commands: NewRevokeAccessTokenHandler: nil dependency")
	}
	return RevokeAccessTokenHandler{store: store, now: now}
}

// Handle records the revocation; the access_tokens projection, inline,
// drops the token in the same transaction, so it authenticates no
// request after the answer. An unknown token, or one already revoked, is
// NotFound.
func (h RevokeAccessTokenHandler) Handle(ctx context.Context, cmd RevokeAccessToken) error {
	p := cmd.Principal
	if err := RequireCompany(p); err != nil {
		return err
	}
	stream := access.TokenStream(p.CompanyID, cmd.TokenID)
	evs, err := h.store.ReadStream(ctx, stream, 0)
	if err != nil {
		return err
	}
	if len(evs) == 0 || evs[0].Type != access.AccessTokenCreatedType || evs[len(evs)-1].Type == access.AccessTokenRevokedType {
		return domain.Errorf(domain.NotFound, "no such access token")
	}
	var created access.AccessTokenCreated
	if err := json.Unmarshal(evs[0].Data, &created); err != nil {
		return fmt.Errorf("commands: access token %s: %w", cmd.TokenID, err)
	}
	if err := access.MayRevokeAccessToken(p, created.OwnerID); err != nil {
		return err
	}
	_, err = h.store.Append(ctx, eventstore.Commit{
		Metadata: Metadata(ctx, p, p.CompanyID),
		Streams: []eventstore.StreamAppend{{
			StreamID: stream, ExpectedVersion: evs[len(evs)-1].StreamVersion,
			Events: []eventstore.Event{eventstore.NewEvent(access.AccessTokenRevokedType, access.AccessTokenRevoked{
				ID: cmd.TokenID, RevokedAt: stamp(h.now()), RevokedBy: p.CreatedBy()})},
		}},
	})
	if err != nil {
		return appendError(err)
	}
	return nil
}
