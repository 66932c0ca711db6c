package app

import (
	"context"
	"encoding/json"
	"time"

	"github.com/clientele/clientele/domain/access"
	"github.com/clientele/clientele/domain/campaign"
	"github.com/clientele/clientele/domain/company"
	"github.com/clientele/clientele/domain/datatarget"
	"github.com/clientele/clientele/domain/importing"
	"github.com/clientele/clientele/domain/segment"
	"github.com/clientele/clientele/eventstore"
	"github.com/clientele/clientele/projections"
	"github.com/clientele/clientele/readmodels"
)

// Companies finds companies; readmodels.Companies implements it.
type Companies interface {
	// ByHost returns the company served at host (no port, lower case), or
	// a domain.NotFound error.
	ByHost(ctx context.Context, host string) (company.Company, error)
	// BySlug returns the company with slug, or a domain.NotFound error.
	BySlug(ctx context.Context, slug string) (company.Company, error)
}

// Access reads users, integrations and access tokens; readmodels.Access
// implements it.
type Access interface {
	// User returns a user of the company, or a domain.NotFound error.
	User(ctx context.Context, companyID, id string) (access.User, error)
	// Integration returns one integration of the company, or a
	// domain.NotFound error.
	Integration(ctx context.Context, companyID, id string) (access.Integration, error)
	// Integrations returns every integration of the company.
	Integrations(ctx context.Context, companyID string) ([]access.Integration, error)
	// AccessTokens returns the company's access tokens (never their
	// values), oldest first; the edges list those a principal may see
	// (access.VisibleAccessTokens).
	AccessTokens(ctx context.Context, companyID string) ([]access.AccessToken, error)
}

// Retriever reads one entity's retrieval pages; readmodels.Shops,
// readmodels.Products, readmodels.Events and readmodels.Sales implement
// it.
type Retriever interface {
	// Stream reads one page of a company's entities in retrieval form,
	// handing each document to each as it arrives, and returns the
	// cursor of the next page, "" on the last.
	Stream(ctx context.Context, q readmodels.PageQuery, each readmodels.DocFunc) (next string, err error)
}

// Customers retrieves customers; readmodels.Customers implements it.
type Customers interface {
	Retriever
	// Retrieve returns one page of a company's customers in retrieval
	// form, deleted ones left out (the console's customer list).
	Retrieve(ctx context.Context, q readmodels.PageQuery) (readmodels.Page, error)
	// Doc returns one customer, or a domain.NotFound error when retrieval
	// does not show it.
	Doc(ctx context.Context, companyID, customerID string) (json.RawMessage, error)
	// Search returns a page of the customers a typed text finds, at
	// bounded cost (the console's customer search).
	Search(ctx context.Context, s readmodels.CustomerSearch) (readmodels.CustomerMatches, error)
	// Overview returns the company's customers, new customers, events
	// and sales per day since a day (the console's overview).
	Overview(ctx context.Context, companyID string, since time.Time, loc *time.Location) (readmodels.OverviewFigures, error)
}

// CustomerHistory reads customers' audit histories;
// readmodels.CustomerHistory implements it.
type CustomerHistory interface {
	// Customer returns every event of a customer of the company, or a
	// domain.NotFound error.
	Customer(ctx context.Context, companyID, customerID string) (readmodels.History, error)
}

// CustomerAsOf reads one customer as retrieval shows it, now or as of a
// past instant; readmodels.CustomerAsOf implements it.
type CustomerAsOf interface {
	// Now returns a customer of the company as retrieval shows it now,
	// a deleted one as deleted, or a domain.NotFound error.
	Now(ctx context.Context, companyID, customerID string) (json.RawMessage, error)
	// AsOf returns a customer of the company as retrieval would have
	// shown it at an instant, or a domain.NotFound error when it did not
	// exist then.
	AsOf(ctx context.Context, companyID, customerID string, at time.Time) (json.RawMessage, error)
}

// Changes reads a company's log as a feed of changes; readmodels.Changes
// implements it.
type Changes interface {
	// Each hands each the changes q selects, in log order, a page of the
	// log at a time, and returns where the next call resumes and whether
	// it stopped at q.Limit.
	Each(ctx context.Context, q readmodels.ChangesQuery, each func(readmodels.Change) error) (next eventstore.Position, more bool, err error)
}

// Activity reads events or sales; readmodels.Events and readmodels.Sales
// implement it.
type Activity interface {
	Retriever
	// OfCustomer returns a customer's newest, as retrieval shows them.
	OfCustomer(ctx context.Context, companyID, customerID string, limit int) ([]json.RawMessage, error)
}

// Datatargets reads datatargets, their queues, their outlets' states and
// logs; readmodels.Datatargets implements it.
type Datatargets interface {
	// Datatargets returns every datatarget of the company, with outlets.
	Datatargets(ctx context.Context, companyID string) ([]datatarget.Datatarget, error)
	// Datatarget returns one datatarget with its outlets, or NotFound.
	Datatarget(ctx context.Context, companyID, id string) (datatarget.Datatarget, error)
	// Outlet returns one outlet of a datatarget, or NotFound.
	Outlet(ctx context.Context, companyID, datatargetID, id string) (datatarget.Outlet, error)
	// Messages returns messages numbered above after, or NotFound.
	Messages(ctx context.Context, companyID, datatargetID string, after int64, limit int) (readmodels.MessagePage, error)
	// Parked returns an outlet's parked batches, oldest first, or
	// NotFound.
	Parked(ctx context.Context, companyID, datatargetID, outletID string) ([]datatarget.Parked, error)
	// Log returns a page of an outlet's attempts, or NotFound.
	Log(ctx context.Context, q readmodels.LogQuery) (readmodels.LogPage, error)
	// LogEntry returns one attempt with its raw request and reply.
	LogEntry(ctx context.Context, companyID, datatargetID, outletID string, number int64) (datatarget.LogEntry, error)
	// OutletStates returns how a datatarget's outlets deliver.
	OutletStates(ctx context.Context, companyID, datatargetID string) ([]readmodels.OutletState, error)
	// FailingOutlets returns the company's outlets that are not
	// delivering now.
	FailingOutlets(ctx context.Context, companyID string) ([]readmodels.OutletState, error)
}

// Campaigns reads campaigns; readmodels.Campaigns implements it.
type Campaigns interface {
	// Campaign returns one campaign of the company, or NotFound.
	Campaign(ctx context.Context, companyID, key string) (campaign.Campaign, error)
	// Campaigns returns a page of the company's campaigns.
	Campaigns(ctx context.Context, q readmodels.CampaignQuery) (readmodels.CampaignPage, error)
	// CampaignStats returns a page of the company's campaigns with their
	// statistics.
	CampaignStats(ctx context.Context, q readmodels.StatsQuery) (readmodels.StatsPage, error)
	// CampaignSalesDays returns a campaign's conversions per day.
	CampaignSalesDays(ctx context.Context, q readmodels.SalesDaysQuery) ([]readmodels.SalesDay, error)
}

// Segments reads segments; readmodels.Segments implements it.
type Segments interface {
	// Segment returns one segment of the company, or NotFound.
	Segment(ctx context.Context, companyID, key string) (readmodels.Segment, error)
	// Segments returns the company's segments, oldest first.
	Segments(ctx context.Context, companyID string) ([]readmodels.Segment, error)
	// CustomerSegments returns the segments a customer is in now.
	CustomerSegments(ctx context.Context, companyID, customerID string) ([]readmodels.CustomerSegment, error)
	// History returns a segment's entries and exits.
	History(ctx context.Context, q readmodels.SegmentHistoryQuery) ([]readmodels.HistoryEntry, error)
	// SizeDays returns each segment's size at the end of each day since a
	// day, in loc (the console's size-over-time charts).
	SizeDays(ctx context.Context, companyID string, since time.Time, loc *time.Location) (map[string][]int64, error)
	// Preview decides a rule for the company's customers now.
	Preview(ctx context.Context, companyID string, rule segment.Rule, now time.Time) (readmodels.SegmentPreview, error)
}

// ImportRuns reads import runs; readmodels.Imports implements it.
type ImportRuns interface {
	// Runs returns up to limit runs of the company, newest first, whose
	// ids are below before ("" for the first page), and the cursor of the
	// next page ("" on the last). Warnings are not read.
	Runs(ctx context.Context, companyID, before string, limit int) ([]readmodels.ImportRun, string, error)
	// Run returns a run of the company, or a domain.NotFound error.
	Run(ctx context.Context, companyID, runID string) (readmodels.ImportRun, error)
	// Rejections returns a page of the run's rejections after a cursor,
	// and the cursor of the next page ("" on the last).
	Rejections(ctx context.Context, runID, after string, limit int) ([]importing.Rejection, string, error)
	// ImportDays sums the company's runs per day since a day, in loc.
	ImportDays(ctx context.Context, companyID string, since time.Time, loc *time.Location) ([]readmodels.ImportDay, error)
}

// SFTPKeys reads the public keys registered for a company's SFTP drop
// directory; readmodels.SFTPKeys implements it.
type SFTPKeys interface {
	// List returns the company's keys.
	List(ctx context.Context, companyID string) ([]access.SFTPKey, error)
	// ByFingerprint returns the company's key, or a domain.NotFound error.
	ByFingerprint(ctx context.Context, companyID, fingerprint string) (access.SFTPKey, error)
}

// ProjectionStatus reports how far the async projections are, and
// whether they parked the company (projections.Runtime.CompanyStatus).
type ProjectionStatus func(ctx context.Context, companyID string) ([]projections.ProjectionStatus, error)
