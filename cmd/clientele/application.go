package main

import (
	"context"
	"errors"
	"fmt"

	clientele "github.com/clientele/clientele/app"
	"github.com/clientele/clientele/authn"
	"github.com/clientele/clientele/commands/imports"
	"github.com/clientele/clientele/projections/retrieval"
	"github.com/clientele/clientele/readmodels"
)

// application builds the application value (app.Application) the edges
// drive (the HTTP API, the console, the SFTP drop directory): the commands, the import
// pipeline, authentication and the read models on a's database, the
// companies served at <slug>.<baseDomain>, and the health of a's
// projections runtime and import worker. It is the one place they are
// wired.
func (a *app) application(baseDomain string) clientele.Application {
	access := readmodels.NewAccess(a.pool)
	return clientele.Application{
		Commands: clientele.Commands{
			Commands:      a.commands,
			Importers:     a.importers,
			Uploads:       a.stageUpload,
			DataQueries:   imports.NewRunDataQueryHandler(readmodels.NewMatcher(a.pool), a.stageUpload),
			Authenticator: authn.New(a.pool, access),
			Sessions:      authn.NewConsoleSessions(a.pool, access, authn.DefaultSessionTTL),
		},
		Queries: clientele.Queries{
			Companies:        readmodels.NewCompanies(a.pool, baseDomain),
			Access:           access,
			Customers:        readmodels.NewCustomers(a.pool),
			CustomerHistory:  readmodels.NewCustomerHistory(a.store, a.pool, a.keys),
			CustomerAsOf:     readmodels.NewCustomerAsOf(a.store, a.pool, retrieval.NewCustomers(a.keys)),
			Changes:          readmodels.NewChanges(a.store, a.pool, a.keys),
			Shops:            readmodels.NewShops(a.pool),
			Products:         readmodels.NewProducts(a.pool),
			Events:           readmodels.NewEvents(a.pool),
			Sales:            readmodels.NewSales(a.pool),
			Datatargets:      readmodels.NewDatatargets(a.pool, a.keys),
			Campaigns:        readmodels.NewCampaigns(a.pool),
			Segments:         readmodels.NewSegments(a.pool),
			Imports:          readmodels.NewImports(a.pool),
			SFTPKeys:         readmodels.NewSFTPKeys(a.pool),
			ProjectionStatus: a.runtime.CompanyStatus,
			Stalled:          a.runtime.StalledCompanies,
			// Ready runs within api.ReadyTimeout: a database that does not
			// answer the ping by then is not ready.
			Ready: func(ctx context.Context) error {
				if err := a.pool.Ping(ctx); err != nil {
					return fmt.Errorf("database: %w", err)
				}
				if a.esdb != nil {
					if err := a.esdb.Ping(ctx); err != nil {
						return fmt.Errorf("event store: %w", err)
					}
				}
				if !a.runtime.Running() {
					return errors.New("projections are not running")
				}
				if a.importWorker != nil && !a.importWorker.Running() {
					return errors.New("the import worker is not running")
				}
				return nil
			},
		},
	}
}
