package commands

import (
	"context"
	"time"

	"github.com/clientele/clientele/domain/access"
	"github.com/clientele/clientele/domain/campaign"
	"github.com/clientele/clientele/eventstore"
)

// UpdateCampaign changes a campaign (PATCH): its attributes, and its
// state by the allowed moves. It needs the staff role.
type UpdateCampaign struct {
	Principal access.Principal
	Key       string
	Input     campaign.Input
}

// UpdateCampaignHandler handles UpdateCampaign.
type UpdateCampaignHandler struct {
	store eventstore.Store
	now   func() time.Time
}

// NewUpdateCampaignHandler returns a handler on store.
func NewUpdateCampaignHandler(store eventstore.Store, now func() time.Time) UpdateCampaignHandler {
	if store == nil || now == nil {
		panic("commands: NewUpdateCampaignHandler: nil dependency")
	}
	return UpdateCampaignHandler{store: store, now: now}
}

// Handle applies the change and returns the campaign as it is afterwards.
// A change that changes nothing appends nothing. A concurrent change of
// the same campaign is retried, as for datatargets: each attempt re-reads
// the campaign and decides again, so no change is lost and a move is
// checked against the state it really leaves (of two PATCHes archiving
// and pausing an active campaign at once, the later finds it archived and
// is refused).
func (h UpdateCampaignHandler) Handle(ctx context.Context, cmd UpdateCampaign) (campaign.Campaign, error) {
	p := cmd.Principal
	if err := RequireCompany(p); err != nil {
		return campaign.Campaign{}, err
	}
	if err := campaign.MayManage(p); err != nil {
		return campaign.Campaign{}, err
	}
	stream := campaign.Stream(p.CompanyID, cmd.Key)
	for attempt := 1; ; attempt++ {
		c, err := h.try(ctx, cmd, stream)
		if conflictOn(err, stream) && attempt < updateAttempts {
			continue
		}
		if err != nil {
			return campaign.Campaign{}, appendError(err)
		}
		return c, nil
	}
}

func (h UpdateCampaignHandler) try(ctx context.Context, cmd UpdateCampaign, stream string) (campaign.Campaign, error) {
	old, version, err := loadCampaign(ctx, h.store, cmd.Principal.CompanyID, cmd.Key)
	if err != nil {
		return old, err
	}
	c, events, err := old.Change(cmd.Principal, cmd.Input, stamp(h.now()))
	if err != nil || len(events) == 0 {
		return c, err
	}
	_, err = h.store.Append(ctx, eventstore.Commit{
		Metadata: Metadata(ctx, cmd.Principal, cmd.Principal.CompanyID),
		Streams:  []eventstore.StreamAppend{{StreamID: stream, ExpectedVersion: version, Events: campaignEvents(events)}},
	})
	return c, err
}
