package commands

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/clientele/clientele/domain"
	"github.com/clientele/clientele/domain/company"
	"github.com/clientele/clientele/eventstore"
)

// claimDomains returns the appends that move a company's custom domains
// from old to new: a claim for each added domain (refused with a Conflict
// when another company holds it) and a release for each removed one. Each
// append expects the version read, so a concurrent claim of the same
// domain makes the commit fail.
func claimDomains(ctx context.Context, store eventstore.Store, companyID string, old, new []string) ([]eventstore.StreamAppend, error) {
	var out []eventstore.StreamAppend
	for _, d := range new {
		if slices.Contains(old, d) {
			continue
		}
		holder, version, err := domainHolder(ctx, store, d)
		if err != nil {
			return nil, err
		}
		if holder != "" && holder != companyID {
			return nil, domain.Errorf(domain.Conflict, "domain %s is already registered to another company", d)
		}
		out = append(out, eventstore.StreamAppend{
			StreamID: company.DomainStream(d), ExpectedVersion: version,
			Events: []eventstore.Event{eventstore.NewEvent(company.DomainClaimedType, company.DomainClaimed{Domain: d, CompanyID: companyID})},
		})
	}
	for _, d := range old {
		if slices.Contains(new, d) {
			continue
		}
		_, version, err := domainHolder(ctx, store, d)
		if err != nil {
			return nil, err
		}
		out = append(out, eventstore.StreamAppend{
			StreamID: company.DomainStream(d), ExpectedVersion: version,
			Events: []eventstore.Event{eventstore.NewEvent(company.DomainReleasedType, company.DomainReleased{Domain: d, CompanyID: companyID})},
		})
	}
	return out, nil
}

// domainHolder returns the company holding a custom domain ("" if none)
// and the version of the domain's reservation stream.
func domainHolder(ctx context.Context, store eventstore.Store, d string) (string, int64, error) {
	evs, err := store.ReadStream(ctx, company.DomainStream(d), 0)
	if err != nil {
		return "", 0, err
	}
	holder, version := "", int64(0)
	for _, e := range evs {
		version = e.StreamVersion
		switch e.Type {
		case company.DomainClaimedType:
			var c company.DomainClaimed
			if err := json.Unmarshal(e.Data, &c); err != nil {
				return "", 0, fmt.Errorf("commands: decode %s: %w", e.Type, err)
			}
			holder = c.CompanyID
		case company.DomainReleasedType:
			holder = ""
		}
	}
	return holder, version, nil
}

// loadCompany folds a company's stream. A company that does not exist is
// NotFound.
func loadCompany(ctx context.Context, store eventstore.Store, companyID string) (company.Company, int64, error) {
	return foldStream(ctx, store, company.Stream(companyID), company.Company{}, applyCompany, func() error {
		return domain.Errorf(domain.NotFound, "no such company")
	})
}

// applyCompany is a company after one more event of its stream.
func applyCompany(c company.Company, e eventstore.RecordedEvent) (company.Company, error) {
	switch e.Type {
	case company.CreatedType:
		ev, err := decodeEvent[company.Created](e)
		return ev.Company(), err
	case company.SettingsChangedType:
		ev, err := decodeEvent[company.SettingsChanged](e)
		return ev.Apply(c), err
	}
	return c, nil
}
