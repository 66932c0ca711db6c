package commands

import (
	"context"
	"time"

	"github.com/clientele/clientele/domain"
	"github.com/clientele/clientele/domain/access"
	"github.com/clientele/clientele/domain/company"
	"github.com/clientele/clientele/eventstore"
)

// UpdateCompanySettings changes some settings of a company; nil fields of
// Change stay as they are. Admins of the company and the system may do it.
type UpdateCompanySettings struct {
	Principal access.Principal
	CompanyID string
	Change    company.SettingsChange
}

// UpdateCompanySettingsHandler handles UpdateCompanySettings.
type UpdateCompanySettingsHandler struct {
	store eventstore.Store
	now   func() time.Time
}

// NewUpdateCompanySettingsHandler returns a handler on store.
func NewUpdateCompanySettingsHandler(store eventstore.Store, now func() time.Time) UpdateCompanySettingsHandler {
	if store == nil || now == nil {
		panic("commands: NewUpdateCompanySettingsHandler: nil dependency")
	}
	return UpdateCompanySettingsHandler{store: store, now: now}
}

// updateAttempts bounds the retries after a concurrent change of the same
// company: each retry re-reads the company and decides again.
const updateAttempts = 3

// Handle applies the change and returns the company as it is afterwards.
// A change that changes nothing appends nothing.
func (h UpdateCompanySettingsHandler) Handle(ctx context.Context, cmd UpdateCompanySettings) (company.Company, error) {
	p := cmd.Principal
	if !p.System && p.CompanyID != cmd.CompanyID {
		return company.Company{}, domain.Errorf(domain.NotFound, "no such company")
	}
	if err := access.MayChangeCompanySettings(p); err != nil {
		return company.Company{}, err
	}
	for attempt := 1; ; attempt++ {
		c, err := h.try(ctx, cmd)
		if conflictOn(err, company.Stream(cmd.CompanyID)) {
			if attempt < updateAttempts {
				continue
			}
			return company.Company{}, appendError(err)
		}
		return c, err
	}
}

func (h UpdateCompanySettingsHandler) try(ctx context.Context, cmd UpdateCompanySettings) (company.Company, error) {
	old, version, err := loadCompany(ctx, h.store, cmd.CompanyID)
	if err != nil {
		return company.Company{}, err
	}
	c, changed, err := old.ChangeSettings(cmd.Change)
	if err != nil || len(changed) == 0 {
		return c, err
	}
	streams := []eventstore.StreamAppend{{
		StreamID: company.Stream(c.ID), ExpectedVersion: version,
		Events: []eventstore.Event{eventstore.NewEvent(company.SettingsChangedType, company.NewSettingsChanged(c, changed, stamp(h.now())))},
	}}
	claims, err := claimDomains(ctx, h.store, c.ID, old.Domains, c.Domains)
	if err != nil {
		return company.Company{}, err
	}
	streams = append(streams, claims...)
	if _, err := h.store.Append(ctx, eventstore.Commit{Metadata: Metadata(ctx, cmd.Principal, c.ID), Streams: streams}); err != nil {
		if conflictOn(err, company.Stream(c.ID)) {
			return company.Company{}, err // retried by Handle
		}
		return company.Company{}, appendError(err)
	}
	return c, nil
}
