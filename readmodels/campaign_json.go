package readmodels

import (
	"time"

	"github.com/clientele/clientele/domain/campaign"
	"github.com/clientele/clientele/domain/values"
)

// CampaignJSON is a campaign as the management endpoints answer it: the
// fields of the interface's campaign statistics object but stats, in its
// order, then ours. The statistics endpoints (GET /api/campaign/actions/)
// answer this object with "stats" added (CampaignStatsJSON); the
// management answers leave stats out rather than answer a null that would
// read as "no statistics".
type CampaignJSON struct {
	CampaignKey  string           `json:"campaign_key"`
	Kind         campaign.Kind    `json:"kind"`
	Automated    bool             `json:"automated"`
	Name         string           `json:"name"`
	State        campaign.State   `json:"state"`
	UTMCampaign  *string          `json:"utm_campaign"`
	CampaignTags []campaign.Tag   `json:"campaign_tags"`
	Folder       *campaign.Folder `json:"folder"`
	Permissions  permissionsJSON  `json:"permissions"`
	ProductIDs   []string         `json:"product_ids"`
	CreatedAt    string           `json:"created_at"`
	ActivatedAt  *string          `json:"activated_at"`
	UpdatedAt    string           `json:"updated_at"`
}

// permissionsJSON is a campaign's permissions; marketing_permission is
// null for an EXT campaign without one.
type permissionsJSON struct {
	MarketingPermission *string `json:"marketing_permission"`
}

// NewCampaignJSON shapes c as the API answers it.
func NewCampaignJSON(c campaign.Campaign) CampaignJSON {
	out := CampaignJSON{
		CampaignKey: c.Key, Kind: c.Kind, Automated: c.Automated(), Name: c.Name, State: c.State,
		CampaignTags: c.Tags, Folder: c.Folder, ProductIDs: c.ProductIDs,
		CreatedAt: campaignTime(c.CreatedAt), UpdatedAt: campaignTime(c.UpdatedAt),
	}
	if out.CampaignTags == nil {
		out.CampaignTags = []campaign.Tag{}
	}
	if out.ProductIDs == nil {
		out.ProductIDs = []string{}
	}
	if c.UTMCampaign != "" {
		out.UTMCampaign = &c.UTMCampaign
	}
	if c.Permission != "" {
		out.Permissions.MarketingPermission = &c.Permission
	}
	if !c.ActivatedAt.IsZero() {
		at := campaignTime(c.ActivatedAt)
		out.ActivatedAt = &at
	}
	return out
}

// campaignTime formats a campaign's times as retrieval does (UTC, Z, the
// fraction when there is one), so that an answer sent back in a PATCH
// names the very same instant.
func campaignTime(t time.Time) string { return t.UTC().Format(values.DateTimeLayout) }

// CampaignStatsJSON is the interface's campaign statistics object: the
// campaign as the management endpoints answer it, with stats (null for a
// draft or an EXT campaign). The statistics endpoints answer it, and a
// datasync datatarget of campaigns takes it as each message's data.
type CampaignStatsJSON struct {
	CampaignJSON
	Stats *Stats `json:"stats"`
}
