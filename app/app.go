// Package app is the application as its edges drive it: Application
// lists every command and query that the HTTP API (package api), the web
// console (package console) and the SFTP drop directory use, each as the
// interface the edge needs, so that an edge translates its protocol into
// these calls and holds nothing else: no pool, no read model of its own.
// cmd/clientele alone builds the value, from the commands, the import
// pipeline, authentication (package authn) and the read models
// (package readmodels); tests build it with fakes where they need one.
package app

import (
	"context"

	"github.com/clientele/clientele/commands"
	"github.com/clientele/clientele/commands/imports"
	"github.com/clientele/clientele/domain/importing"
)

// Application is every use case of the edges: the commands, which change
// state, and the queries, which read it.
type Application struct {
	Commands Commands
	Queries  Queries
}

// Commands are the use cases that change state.
type Commands struct {
	// Commands are the event-sourced use cases (one handler each).
	commands.Commands
	// Importers are the Importers of the entities that can be uploaded:
	// an entity is uploaded only when it has one (the import worker runs
	// them; the edges only need to know which exist).
	Importers map[importing.Entity]imports.Importer
	// Uploads stages uploads; required when Importers is not empty.
	Uploads Uploads
	// DataQueries runs data queries (POST /api/data/query/); nil serves
	// none.
	DataQueries DataQueries
	// Authenticator authenticates access tokens and users' passwords
	// (which uses up a TOTP code).
	Authenticator Authenticator
	// Sessions are the console's log-ins.
	Sessions Sessions
}

// Queries are the use cases that read. A nil query of an optional read
// model leaves the routes and pages that show it out.
type Queries struct {
	Companies Companies
	// Access reads users, integrations and access tokens.
	Access Access
	// Customers and CustomerHistory read customers.
	Customers       Customers
	CustomerHistory CustomerHistory
	// CustomerAsOf reads one customer now or as of a past instant
	// (optional).
	CustomerAsOf CustomerAsOf
	// Changes reads the company's log as a feed of changes (optional).
	Changes Changes
	// Shops and Products read shops and products (optional).
	Shops, Products Retriever
	// Events and Sales read events and sales (optional).
	Events, Sales Activity
	// Datatargets reads datatargets, their queues, outlets and logs.
	Datatargets Datatargets
	// Campaigns reads campaigns and their statistics (optional).
	Campaigns Campaigns
	// Segments reads segments (optional).
	Segments Segments
	// Imports reads import runs (optional for the API).
	Imports ImportRuns
	// SFTPKeys reads the SFTP drop directory's keys (optional).
	SFTPKeys SFTPKeys
	// ProjectionStatus reports how far the async projections are for a
	// company; nil leaves the lag off the console's overview.
	ProjectionStatus ProjectionStatus
	// Stalled counts, by projection, the companies whose commits a
	// projection has parked (projections.Runtime.StalledCompanies). A
	// stall is one company's problem, not the node's: GET /readyz stays
	// 200 and shows the counts. Nil means none are reported.
	Stalled func(ctx context.Context) (map[string]int, error)
	// Ready reports whether the service can serve traffic (database
	// reachable, projections running); GET /readyz answers 503 while it
	// returns an error. Nil means always ready.
	Ready func(ctx context.Context) error
}
