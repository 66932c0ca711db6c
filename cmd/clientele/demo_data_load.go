package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/clientele/clientele/commands"
	"github.com/clientele/clientele/commands/imports"
	"github.com/clientele/clientele/domain"
	"github.com/clientele/clientele/domain/access"
	"github.com/clientele/clientele/domain/campaign"
	"github.com/clientele/clientele/domain/datatarget"
	"github.com/clientele/clientele/domain/importing"
	"github.com/clientele/clientele/internal/ingest"
	"github.com/clientele/clientele/readmodels"
)

// The demo's datatargets and integration, found by name when a load
// interrupted before its uploads is done again.
const (
	demoSyncName     = "CRM-synkronointi"
	demoMessagesName = "Tilausvahvistukset"
	demoShopName     = "Verkkokauppa"
)

// demoDataLoad is a load of the demo set under way: the runs staged, which
// serve's import worker applies.
type demoDataLoad struct {
	companyID string
	set       demoSet
	runs      []string
	began     time.Time
}

// loadDemoData loads the demo set (newDemoSet, ending at now) into the
// demo company when it has no data yet, through the commands and the
// import pipeline as any client would: the campaign, the datatargets and
// the integration by their commands, the records as four uploads (source
// "cli") that serve's import worker applies in upload order. It returns
// nil when the company has data: a company that had an import run, or has
// customers, is never loaded into. The uploads are staged last, so that a
// start interrupted before them loads again on the next start, and finds
// what it made by then (a campaign by its key, the rest by name).
func loadDemoData(ctx context.Context, a *app, companyID string, now time.Time) (*demoDataLoad, error) {
	if has, err := demoHasData(ctx, a, companyID); err != nil || has {
		if has {
			a.log.Info("demo data not loaded: the demo company has data")
		}
		return nil, err
	}
	load := &demoDataLoad{companyID: companyID, set: newDemoSet(now), began: time.Now()}
	ctx = commands.WithRequest(ctx, "cli", commands.NewID())
	p := access.System(companyID)
	if err := demoCampaignCreate(ctx, a, p, load.set.Campaign); err != nil {
		return nil, fmt.Errorf("campaign: %w", err)
	}
	if err := demoDatatargets(ctx, a, p); err != nil {
		return nil, fmt.Errorf("datatargets: %w", err)
	}
	if err := demoIntegration(ctx, a, p); err != nil {
		return nil, fmt.Errorf("integration: %w", err)
	}
	for _, up := range []struct {
		entity  importing.Entity
		records []map[string]any
	}{
		{importing.Customers, load.set.Customers},
		{importing.Products, load.set.Products},
		{importing.Events, load.set.Events},
		{importing.Sales, load.set.Sales},
	} {
		body, err := json.Marshal(up.records)
		if err != nil {
			return nil, err
		}
		staged, err := a.stageUpload.Handle(ctx, imports.StageUpload{
			Principal: p, Entity: up.entity, Format: ingest.JSON, Body: bytes.NewReader(body), Source: "cli",
		})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", up.entity, err)
		}
		load.runs = append(load.runs, staged.RunID)
	}
	a.log.Info("loading demo data", "customers", len(load.set.Customers), "products", len(load.set.Products),
		"events", len(load.set.Events), "sales", len(load.set.Sales), "campaign", load.set.Campaign.Key)
	return load, nil
}

// demoHasData reports whether the company had an import run (every
// customer, product, event and sale comes through one) or has customers.
func demoHasData(ctx context.Context, a *app, companyID string) (bool, error) {
	runs, _, err := readmodels.NewImports(a.pool).Runs(ctx, companyID, "", 1)
	if err != nil || len(runs) > 0 {
		return len(runs) > 0, err
	}
	page, err := readmodels.NewCustomers(a.pool).Retrieve(ctx, readmodels.PageQuery{CompanyID: companyID, Limit: 1})
	return len(page.Docs) > 0, err
}

// demoCampaignCreate creates the campaign, active since its activation;
// one made by an interrupted load is kept.
func demoCampaignCreate(ctx context.Context, a *app, p access.Principal, c demoCampaign) error {
	kind, state := campaign.Email, campaign.StateActive
	tags := []campaign.Tag{{ID: "1", Label: "Kausikampanjat"}}
	_, err := a.commands.CreateCampaign.Handle(ctx, commands.CreateCampaign{Principal: p, Input: campaign.Input{
		Key: &c.Key, Kind: &kind, Name: &c.Name, State: &state, UTMCampaign: &c.UTMCampaign,
		Tags: &tags, ProductIDs: &c.ProductIDs, ActivatedAt: &c.ActivatedAt,
	}})
	if domain.ErrorCode(err) == domain.Conflict {
		return nil
	}
	return err
}

// demoDatatargets creates a datasync datatarget of customers (from the
// start of the log, so that it holds every demo customer) and a messages
// datatarget with a few order confirmations, unless they exist.
func demoDatatargets(ctx context.Context, a *app, p access.Principal) error {
	have, err := readmodels.NewDatatargets(a.pool, a.keys).Datatargets(ctx, p.CompanyID)
	if err != nil {
		return err
	}
	named := func(name string) bool {
		return slices.ContainsFunc(have, func(d datatarget.Datatarget) bool { return d.Name == name })
	}
	if !named(demoSyncName) {
		if _, err := a.commands.CreateDatatarget.Handle(ctx, commands.CreateDatatarget{
			Principal: p, Type: datatarget.Datasync, Name: demoSyncName,
			Description: "Asiakkaiden muutokset CRM-järjestelmään",
			Settings:    datatarget.Settings{Datatype: datatarget.Customers, FromStart: true},
		}); err != nil {
			return err
		}
	}
	if named(demoMessagesName) {
		return nil
	}
	d, err := a.commands.CreateDatatarget.Handle(ctx, commands.CreateDatatarget{
		Principal: p, Type: datatarget.Messages, Name: demoMessagesName,
		Description: "Tilausvahvistukset sähköpostipalvelulle",
	})
	if err != nil {
		return err
	}
	var messages []json.RawMessage
	for i, sum := range []int{4490, 12990, 2690, 8990, 5480} {
		messages = append(messages, json.RawMessage(fmt.Sprintf(
			`{"template": "tilausvahvistus", "order": "T-%06d", "total": %d, "currency": "EUR", "language": "fi"}`, 400001+i, sum)))
	}
	_, err = a.commands.PostDatatargetMessages.Handle(ctx, commands.PostDatatargetMessages{
		Principal: p, DatatargetID: d.ID, Messages: messages,
	})
	return err
}

// demoIntegration creates the shop's integration, unless it exists.
func demoIntegration(ctx context.Context, a *app, p access.Principal) error {
	have, err := readmodels.NewAccess(a.pool).Integrations(ctx, p.CompanyID)
	if err != nil {
		return err
	}
	if slices.ContainsFunc(have, func(i access.Integration) bool { return i.Name == demoShopName }) {
		return nil
	}
	_, err = a.commands.CreateIntegration.Handle(ctx, commands.CreateIntegration{
		Principal: p, IntegrationName: "webshop", Name: demoShopName, Description: "Verkkokaupan tilaukset ja asiakkaat",
	})
	return err
}

// await waits for the load's runs to be done, and logs their counts and
// how long the load took; a run that rejected records or failed is
// logged as a warning.
func (l *demoDataLoad) await(ctx context.Context, a *app) {
	q := readmodels.NewImports(a.pool)
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	var accepted, rejected int64
	for i := 0; i < len(l.runs); {
		run, err := q.Run(ctx, l.companyID, l.runs[i])
		switch {
		case err != nil && ctx.Err() == nil:
			a.log.Warn("demo data: reading an import run", "run", l.runs[i], "err", err)
		case run.State == importing.Completed || run.State == importing.Failed:
			accepted, rejected = accepted+run.Accepted, rejected+run.Rejected
			if run.State == importing.Failed || run.Rejected > 0 {
				a.log.Warn("demo data: an upload was not imported whole", "run", run.ID, "entity", run.Entity,
					"state", run.State, "rejected", run.Rejected, "failure", run.Failure)
			}
			i++
			continue
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
	a.log.Info("demo data loaded", "customers", len(l.set.Customers), "products", len(l.set.Products),
		"events", len(l.set.Events), "sales", len(l.set.Sales), "accepted", accepted, "rejected", rejected,
		"took", time.Since(l.began).Round(time.Millisecond).String())
}
