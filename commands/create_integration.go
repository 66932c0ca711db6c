package commands

import (
	"context"
	"time"

	"github.com/clientele/clientele/domain/access"
	"github.com/clientele/clientele/eventstore"
)

// CreateIntegration creates an integration in the principal's company; it
// needs the admin role.
type CreateIntegration struct {
	Principal access.Principal
	// IntegrationName may be empty.
	IntegrationName string
	// Name and Description are the integration's parameters; an empty Name
	// falls back to IntegrationName.
	Name, Description string
}

// CreateIntegrationHandler handles CreateIntegration.
type CreateIntegrationHandler struct {
	store eventstore.Store
	now   func() time.Time
}

// NewCreateIntegrationHandler returns a handler on store.
func NewCreateIntegrationHandler(store eventstore.Store, now func() time.Time) CreateIntegrationHandler {
	if store == nil || now == nil {
		panic("commands: NewCreateIntegrationHandler: nil dependency")
	}
	return CreateIntegrationHandler{store: store, now: now}
}

// Handle creates the integration, enabled.
func (h CreateIntegrationHandler) Handle(ctx context.Context, cmd CreateIntegration) (access.Integration, error) {
	p := cmd.Principal
	if err := RequireCompany(p); err != nil {
		return access.Integration{}, err
	}
	if err := checkSystemCompany(ctx, h.store, p); err != nil {
		return access.Integration{}, err
	}
	i, err := access.NewIntegration(p, NewID(), cmd.IntegrationName, cmd.Name, cmd.Description, stamp(h.now()))
	if err != nil {
		return access.Integration{}, err
	}
	_, err = h.store.Append(ctx, eventstore.Commit{
		Metadata: Metadata(ctx, p, p.CompanyID),
		Streams: []eventstore.StreamAppend{{
			StreamID: access.IntegrationStream(p.CompanyID, i.ID), ExpectedVersion: eventstore.NoStream,
			Events: []eventstore.Event{eventstore.NewEvent(access.IntegrationCreatedType, access.NewIntegrationCreated(i))},
		}},
	})
	if err != nil {
		return access.Integration{}, appendError(err)
	}
	return i, nil
}
