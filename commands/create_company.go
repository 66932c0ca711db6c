package commands

import (
	"context"
	"time"

	"github.com/clientele/clientele/domain"
	"github.com/clientele/clientele/domain/access"
	"github.com/clientele/clientele/domain/company"
	"github.com/clientele/clientele/eventstore"
)

// CreateCompany creates a tenant. Only the system (the CLI) creates
// companies.
type CreateCompany struct {
	Principal access.Principal
	Slug      string
	Settings  company.Settings
}

// CreateCompanyHandler handles CreateCompany.
type CreateCompanyHandler struct {
	store eventstore.Store
	now   func() time.Time
}

// NewCreateCompanyHandler returns a handler on store.
func NewCreateCompanyHandler(store eventstore.Store, now func() time.Time) CreateCompanyHandler {
	if store == nil || now == nil {
		panic("commands: NewCreateCompanyHandler: nil dependency")
	}
	return CreateCompanyHandler{store: store, now: now}
}

// Handle creates the company. The slug and every custom domain are
// reserved in the same commit, so a taken one fails the whole creation
// with a Conflict.
func (h CreateCompanyHandler) Handle(ctx context.Context, cmd CreateCompany) (company.Company, error) {
	if !cmd.Principal.System {
		return company.Company{}, domain.Errorf(domain.Forbidden, "only the operator can create companies")
	}
	c, err := company.New(NewID(), cmd.Slug, cmd.Settings, stamp(h.now()))
	if err != nil {
		return company.Company{}, err
	}
	// Checked here for a precise answer; the reservation in the commit
	// settles a race.
	if taken, err := h.store.ReadStream(ctx, company.SlugStream(c.Slug), 0); err != nil {
		return company.Company{}, err
	} else if len(taken) > 0 {
		return company.Company{}, domain.Errorf(domain.Conflict, "company slug already taken")
	}
	streams := []eventstore.StreamAppend{
		{StreamID: company.Stream(c.ID), ExpectedVersion: eventstore.NoStream, Events: []eventstore.Event{eventstore.NewEvent(company.CreatedType, company.NewCreated(c))}},
		{StreamID: company.SlugStream(c.Slug), ExpectedVersion: eventstore.NoStream, Events: []eventstore.Event{eventstore.NewEvent(company.SlugReservedType, company.SlugReserved{Slug: c.Slug, CompanyID: c.ID})}},
	}
	claims, err := claimDomains(ctx, h.store, c.ID, nil, c.Domains)
	if err != nil {
		return company.Company{}, err
	}
	streams = append(streams, claims...)
	_, err = h.store.Append(ctx, eventstore.Commit{Metadata: Metadata(ctx, cmd.Principal, c.ID), Streams: streams})
	switch {
	case err == nil:
		return c, nil
	case conflictOn(err, company.SlugStream(c.Slug)) && len(c.Domains) == 0:
		return company.Company{}, domain.Errorf(domain.Conflict, "company slug already taken")
	case conflictOn(err, company.SlugStream(c.Slug)):
		return company.Company{}, domain.Errorf(domain.Conflict, "company slug already taken, or one of its domains registered concurrently")
	}
	return company.Company{}, appendError(err)
}
