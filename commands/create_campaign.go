package commands

import (
	"context"
	"fmt"
	"time"

	"github.com/clientele/clientele/domain"
	"github.com/clientele/clientele/domain/access"
	"github.com/clientele/clientele/domain/campaign"
	"github.com/clientele/clientele/eventstore"
)

// CreateCampaign creates a campaign in the principal's company; it needs
// the staff role. Without a campaign_key, one is generated: CA-<n>.
type CreateCampaign struct {
	Principal access.Principal
	Input     campaign.Input
}

// CreateCampaignHandler handles CreateCampaign.
type CreateCampaignHandler struct {
	store eventstore.Store
	now   func() time.Time
	keys  *keyCounters
}

// NewCreateCampaignHandler returns a handler on store.
func NewCreateCampaignHandler(store eventstore.Store, now func() time.Time) CreateCampaignHandler {
	if store == nil || now == nil {
		panic("commands: NewCreateCampaignHandler: nil dependency")
	}
	return CreateCampaignHandler{store: store, now: now, keys: &keyCounters{stream: campaign.KeysStream}}
}

// generateAttempts bounds the tries of a creation with a generated key:
// each try loses only to another creation of the same company that got
// its number first (or to a campaign created with the very key it
// probed), so a few suffice even under a burst of creations.
const generateAttempts = 10

// Handle creates the campaign (a draft, or moved at once to the state the
// input asks for) and returns it. A key already taken is 409 conflict, as
// every duplicate is (user emails, company slugs).
func (h CreateCampaignHandler) Handle(ctx context.Context, cmd CreateCampaign) (campaign.Campaign, error) {
	p := cmd.Principal
	if err := RequireCompany(p); err != nil {
		return campaign.Campaign{}, err
	}
	if err := campaign.MayManage(p); err != nil {
		return campaign.Campaign{}, err
	}
	if err := checkSystemCompany(ctx, h.store, p); err != nil {
		return campaign.Campaign{}, err
	}
	if key, ok := cmd.Input.GivenKey(); ok {
		return h.create(ctx, cmd, key)
	}
	for attempt := 1; ; attempt++ {
		c, err := h.generate(ctx, cmd)
		if conflictOn(err, campaign.KeysStream(p.CompanyID)) || conflictOn(err, campaign.Stream(p.CompanyID, c.Key)) {
			if attempt < generateAttempts {
				continue
			}
			return campaign.Campaign{}, appendError(err)
		}
		return c, err
	}
}

// create creates the campaign under the key the client gave.
func (h CreateCampaignHandler) create(ctx context.Context, cmd CreateCampaign, key string) (campaign.Campaign, error) {
	p := cmd.Principal
	c, events, err := campaign.New(p, key, cmd.Input, stamp(h.now()))
	if err != nil {
		return campaign.Campaign{}, err
	}
	stream := campaign.Stream(p.CompanyID, key)
	_, err = h.store.Append(ctx, eventstore.Commit{
		Metadata: Metadata(ctx, p, p.CompanyID),
		Streams:  []eventstore.StreamAppend{{StreamID: stream, ExpectedVersion: eventstore.NoStream, Events: campaignEvents(events)}},
	})
	switch {
	case err == nil:
		return c, nil
	case conflictOn(err, stream):
		return campaign.Campaign{}, errTakenKey(key)
	}
	return campaign.Campaign{}, appendError(err)
}

func errTakenKey(key string) error {
	return &domain.Error{Code: domain.Conflict, Message: fmt.Sprintf("a campaign with campaign_key %s already exists", key),
		Details: []domain.FieldError{{Field: "campaign_key", Reason: "already exists"}}}
}

// generate creates the campaign under the company's next free generated
// key, in one commit with the key's generation: the keys stream is
// expected at the version read, so a concurrent generation is a conflict
// and Handle tries again. A number some campaign holds already (created
// with that very key) is skipped.
func (h CreateCampaignHandler) generate(ctx context.Context, cmd CreateCampaign) (campaign.Campaign, error) {
	p := cmd.Principal
	counter, err := h.keys.read(ctx, h.store, p.CompanyID)
	if err != nil {
		return campaign.Campaign{}, err
	}
	n := counter.number + 1
	for ; ; n++ {
		evs, err := h.store.ReadStream(ctx, campaign.Stream(p.CompanyID, campaign.GeneratedKey(n)), 0)
		if err != nil {
			return campaign.Campaign{}, err
		}
		if len(evs) == 0 {
			break
		}
	}
	key := campaign.GeneratedKey(n)
	c, events, err := campaign.New(p, key, cmd.Input, stamp(h.now()))
	if err != nil {
		return campaign.Campaign{}, err
	}
	done, err := h.store.Append(ctx, eventstore.Commit{
		Metadata: Metadata(ctx, p, p.CompanyID),
		Streams: []eventstore.StreamAppend{
			{StreamID: campaign.KeysStream(p.CompanyID), ExpectedVersion: counter.version,
				Events: []eventstore.Event{eventstore.NewEvent(campaign.KeyGeneratedType, campaign.KeyGenerated{Number: n, Key: key})}},
			{StreamID: campaign.Stream(p.CompanyID, key), ExpectedVersion: eventstore.NoStream, Events: campaignEvents(events)},
		},
	})
	if err != nil {
		return campaign.Campaign{Key: key}, err
	}
	h.keys.remember(p.CompanyID, keyCounter{version: done.Events[0].StreamVersion, number: n})
	return c, nil
}
