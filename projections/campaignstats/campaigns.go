package campaignstats

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/clientele/clientele/domain/campaign"
	"github.com/clientele/clientele/eventstore"
	"github.com/clientele/clientele/projections/internal/bulk"
)

// Campaigns keeps the campaigns table: each campaign as its stream leaves
// it. It runs inline, so a client reads the campaign it just created or
// changed at once. The statistics of campaigns (CampaignStats, async)
// follow the same events.
type Campaigns struct{}

// Name implements Projector.
func (Campaigns) Name() string { return "campaigns" }

// Tables implements Projector.
func (Campaigns) Tables() []string { return []string{"campaigns"} }

// campaignRow is a campaigns row; Attributes give name, utm_campaign,
// campaign_tags, folder, marketing_permission and product_ids. SetsAttrs
// and SetsState say which parts the batch's events of a campaign created
// before it set (an update writes those only).
type campaignRow struct {
	CompanyID string         `json:"company_id"`
	Key       string         `json:"campaign_key"`
	Kind      campaign.Kind  `json:"kind"`
	State     campaign.State `json:"state"`
	campaign.Attributes
	CreatedBy   string     `json:"created_by"`
	CreatedAt   time.Time  `json:"created_at"`
	ActivatedAt *time.Time `json:"activated_at"`
	UpdatedAt   time.Time  `json:"updated_at"`
	Version     int64      `json:"version"`
	SetsAttrs   bool       `json:"sets_attrs"`
	SetsState   bool       `json:"sets_state"`
}

// campaignFold is one campaign's events of a batch, folded by the domain
// (campaign.Campaign.Apply) from its creation when the batch has it, and
// otherwise from nothing, noting which parts the events set.
type campaignFold struct {
	created, attrs, state bool
	c                     campaign.Campaign
	version               int64
}

func (f *campaignFold) row() campaignRow {
	r := campaignRow{CompanyID: f.c.CompanyID, Key: f.c.Key, Kind: f.c.Kind, State: f.c.State, Attributes: f.c.Attributes,
		CreatedBy: f.c.CreatedBy, CreatedAt: f.c.CreatedAt, UpdatedAt: f.c.UpdatedAt, Version: f.version,
		SetsAttrs: f.attrs, SetsState: f.state}
	if !f.c.ActivatedAt.IsZero() {
		t := f.c.ActivatedAt
		r.ActivatedAt = &t
	}
	return r
}

// Apply writes the batch's campaigns in one round trip: the new ones
// whole (with their later events of the batch folded in), then the
// others, one statement each. Every column is what the fold of the
// campaign's stream gives (updated_at is the last event's, even when a
// node's clock put it before an earlier one's), so that inline, a commit
// at a time, and a rebuild, in pages of any size, write the same row.
//
// A row already at the batch's version or later is left alone (a new one
// is inserted only once): a commit handed over again, even after later
// ones, changes nothing.
func (Campaigns) Apply(ctx context.Context, tx pgx.Tx, events []eventstore.RecordedEvent) error {
	folds := map[string]*campaignFold{}
	var order []string
	for _, e := range events {
		ev, err := campaign.Decode(e.Type, e.Data)
		if err != nil {
			return fmt.Errorf("projections: campaigns: %s/%d: %w", e.StreamID, e.StreamVersion, err)
		}
		if ev == nil {
			continue
		}
		f := folds[e.StreamID]
		if f == nil {
			f = &campaignFold{c: campaign.Campaign{CompanyID: e.Metadata.CompanyID, Key: ev.CampaignKey()}}
			folds[e.StreamID] = f
			order = append(order, e.StreamID)
		}
		f.c, f.version = f.c.Apply(ev), e.StreamVersion
		switch e.Type {
		case campaign.CreatedType:
			f.created = true
		case campaign.UpdatedType:
			f.attrs = true
		default:
			f.state = true
		}
	}
	var created, changed []campaignRow
	for _, id := range order {
		if f := folds[id]; f.created {
			created = append(created, f.row())
		} else {
			changed = append(changed, f.row())
		}
	}

	var b pgx.Batch
	if err := bulk.QueueRows(&b, "campaigns", `
		INSERT INTO campaigns (company_id, campaign_key, kind, state, name, utm_campaign, campaign_tags, folder,
			marketing_permission, product_ids, created_by, created_at, activated_at, updated_at, version)
		SELECT company_id, campaign_key, kind, state, name, utm_campaign, campaign_tags, nullif(folder, 'null'),
			marketing_permission, product_ids, created_by, created_at, activated_at, updated_at, version
		FROM jsonb_to_recordset($1::jsonb) AS r(company_id text, campaign_key text, kind text, state text, name text,
			utm_campaign text, campaign_tags jsonb, folder jsonb, marketing_permission text, product_ids text[],
			created_by text, created_at timestamptz, activated_at timestamptz, updated_at timestamptz, version bigint)
		ON CONFLICT (company_id, campaign_key) DO NOTHING`, created); err != nil {
		return err
	}
	// The attributes events carry them all, and the state events the
	// state (Activated, activated_at too): what the batch set replaces
	// what the row holds, the rest stays.
	if err := bulk.QueueRows(&b, "campaigns", `
		UPDATE campaigns c SET
			name = CASE WHEN r.sets_attrs THEN r.name ELSE c.name END,
			utm_campaign = CASE WHEN r.sets_attrs THEN r.utm_campaign ELSE c.utm_campaign END,
			campaign_tags = CASE WHEN r.sets_attrs THEN r.campaign_tags ELSE c.campaign_tags END,
			folder = CASE WHEN r.sets_attrs THEN nullif(r.folder, 'null') ELSE c.folder END,
			marketing_permission = CASE WHEN r.sets_attrs THEN r.marketing_permission ELSE c.marketing_permission END,
			product_ids = CASE WHEN r.sets_attrs THEN r.product_ids ELSE c.product_ids END,
			state = CASE WHEN r.sets_state THEN r.state ELSE c.state END,
			activated_at = coalesce(r.activated_at, c.activated_at),
			updated_at = r.updated_at, version = r.version
		FROM jsonb_to_recordset($1::jsonb) AS r(company_id text, campaign_key text, name text, utm_campaign text,
			campaign_tags jsonb, folder jsonb, marketing_permission text, product_ids text[], state text,
			activated_at timestamptz, updated_at timestamptz, version bigint, sets_attrs boolean, sets_state boolean)
		WHERE c.company_id = r.company_id AND c.campaign_key = r.campaign_key AND c.version < r.version`, changed); err != nil {
		return err
	}
	if b.Len() == 0 {
		return nil
	}
	return bulk.SendBatch(ctx, tx, "campaigns", &b)
}
