package readmodels

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/clientele/clientele/domain"
	"github.com/clientele/clientele/domain/campaign"
)

// Campaigns reads campaigns (the table of projections/campaignstats.Campaigns).
type Campaigns struct {
	db database
}

// CampaignsIn returns the queries within tx: the campaign_stats projector
// reads the statistics it has just written, before its commit, to send
// them to datasync datatargets (projections/campaign_stats_sync.go).
func CampaignsIn(tx pgx.Tx) *Campaigns { return &Campaigns{db: database{tx}} }

// NewCampaigns returns the queries on pool.
func NewCampaigns(pool *pgxpool.Pool) *Campaigns {
	if pool == nil {
		panic("readmodels: NewCampaigns: nil pool")
	}
	return &Campaigns{db: database{pool}}
}

// CampaignQuery asks for one page of a company's campaigns, oldest first
// (by created_at, then campaign_key: an order that never changes, so a
// page boundary stays put while campaigns are created and changed).
type CampaignQuery struct {
	CompanyID string
	// State and Kind, when not empty, keep only the campaigns in that
	// state or of that kind.
	State campaign.State
	Kind  campaign.Kind
	// After is the Next of the previous page; "" starts at the first.
	After string
	// Limit is the page size, 1 to MaxLimit.
	Limit int
}

// CampaignPage is one page of campaigns.
type CampaignPage struct {
	Campaigns []campaign.Campaign
	// Next is the After of the next page, "" on the last page.
	Next string
}

const selectCampaign = `SELECT company_id, campaign_key, kind, state, name, utm_campaign, campaign_tags, folder,
	marketing_permission, product_ids, created_by, created_at, activated_at, updated_at FROM campaigns `

// Campaign returns one campaign of the company, or NotFound.
func (q *Campaigns) Campaign(ctx context.Context, companyID, key string) (campaign.Campaign, error) {
	rows, err := q.db.Query(ctx, selectCampaign+`WHERE company_id = $1 AND campaign_key = $2`, companyID, key)
	if err != nil {
		return campaign.Campaign{}, fmt.Errorf("readmodels: campaign: %w", err)
	}
	c, err := pgx.CollectExactlyOneRow(rows, scanCampaign)
	if errors.Is(err, pgx.ErrNoRows) {
		return c, domain.Errorf(domain.NotFound, "no such campaign")
	}
	if err != nil {
		return c, fmt.Errorf("readmodels: campaign: %w", err)
	}
	return c, nil
}

// Campaigns returns a page of the company's campaigns.
func (q *Campaigns) Campaigns(ctx context.Context, cq CampaignQuery) (CampaignPage, error) {
	if cq.Limit < 1 || cq.Limit > MaxLimit {
		return CampaignPage{}, fmt.Errorf("readmodels: campaigns: limit %d out of 1..%d", cq.Limit, MaxLimit)
	}
	var afterAt *time.Time
	var afterKey string
	if cq.After != "" {
		at, key, err := parseCampaignCursor(cq.After)
		if err != nil {
			return CampaignPage{}, err
		}
		afterAt, afterKey = &at, key
	}
	rows, err := q.db.Query(ctx, selectCampaign+`WHERE company_id = $1
		AND ($2 = '' OR state = $2) AND ($3 = '' OR kind = $3)
		AND ($4::timestamptz IS NULL OR (created_at, campaign_key) > ($4, $5))
		ORDER BY created_at, campaign_key LIMIT $6`,
		cq.CompanyID, string(cq.State), string(cq.Kind), afterAt, afterKey, cq.Limit+1)
	if err != nil {
		return CampaignPage{}, fmt.Errorf("readmodels: campaigns: %w", err)
	}
	list, err := pgx.CollectRows(rows, scanCampaign)
	if err != nil {
		return CampaignPage{}, fmt.Errorf("readmodels: campaigns: %w", err)
	}
	page := CampaignPage{Campaigns: list}
	if len(list) > cq.Limit {
		page.Campaigns = list[:cq.Limit]
		last := page.Campaigns[cq.Limit-1]
		page.Next = last.CreatedAt.UTC().Format(time.RFC3339Nano) + " " + last.Key
	}
	return page, nil
}

// parseCampaignCursor reads a Next: the created_at and key of the last
// campaign of a page.
func parseCampaignCursor(s string) (time.Time, string, error) {
	at, key, ok := strings.Cut(s, " ")
	t, err := time.Parse(time.RFC3339Nano, at)
	if !ok || err != nil || !campaign.ValidKey(key) {
		e := domain.Errorf(domain.Invalid, "query parameter cursor is not a cursor of this endpoint; follow next_url")
		e.Details = []domain.FieldError{{Field: "cursor", Reason: e.Message}}
		return time.Time{}, "", e
	}
	return t, key, nil
}

func scanCampaign(row pgx.CollectableRow) (campaign.Campaign, error) {
	var c campaign.Campaign
	var activated *time.Time
	err := row.Scan(&c.CompanyID, &c.Key, &c.Kind, &c.State, &c.Name, &c.UTMCampaign, &c.Tags, &c.Folder,
		&c.Permission, &c.ProductIDs, &c.CreatedBy, &c.CreatedAt, &activated, &c.UpdatedAt)
	c.CreatedAt, c.UpdatedAt = c.CreatedAt.UTC(), c.UpdatedAt.UTC()
	if activated != nil {
		c.ActivatedAt = activated.UTC()
	}
	return c, err
}
