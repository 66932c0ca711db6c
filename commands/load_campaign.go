package commands

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/clientele/clientele/domain"
	"github.com/clientele/clientele/domain/campaign"
	"github.com/clientele/clientele/eventstore"
)

func errNoCampaign() error { return domain.Errorf(domain.NotFound, "no such campaign") }

// loadCampaign folds a campaign's stream into its current state and
// version. An unknown campaign (or a key no campaign can have) is
// NotFound.
func loadCampaign(ctx context.Context, store eventstore.Store, companyID, key string) (campaign.Campaign, int64, error) {
	c := campaign.Campaign{CompanyID: companyID}
	if !campaign.ValidKey(key) {
		return c, 0, errNoCampaign()
	}
	return foldStream(ctx, store, campaign.Stream(companyID, key), c, applyCampaign, errNoCampaign)
}

// applyCampaign is a campaign after one more event of its stream.
func applyCampaign(c campaign.Campaign, e eventstore.RecordedEvent) (campaign.Campaign, error) {
	ev, err := campaign.Decode(e.Type, e.Data)
	if err != nil || ev == nil {
		return c, err
	}
	return c.Apply(ev), nil
}

// campaignEvents encodes a decision's events for the store.
func campaignEvents(evs []campaign.Event) []eventstore.Event {
	out := make([]eventstore.Event, len(evs))
	for i, e := range evs {
		out[i] = eventstore.NewEvent(e.EventType(), e)
	}
	return out
}

// keyCounters remembers, per company, how far this process has read a
// keys stream (campaigns', segments'), so that generating a key reads only the generations since
// (the stream grows by one event per generated key, for ever). It is a
// hint only: the append expects the version read, so a generation by
// another process is a conflict, and the retry reads it.
type keyCounters struct {
	// stream names the company's keys stream.
	stream func(companyID string) string
	mu     sync.Mutex
	m      map[string]keyCounter
}

// keyCounter is where a company's keys stream stood when last read: its
// version and the last number generated.
type keyCounter struct {
	version, number int64
}

// read returns the company's keys stream as it stands now.
func (k *keyCounters) read(ctx context.Context, store eventstore.Store, companyID string) (keyCounter, error) {
	k.mu.Lock()
	c := k.m[companyID]
	k.mu.Unlock()
	evs, err := store.ReadStream(ctx, k.stream(companyID), c.version)
	if err != nil {
		return c, err
	}
	for _, e := range evs {
		var ev struct {
			Number int64 `json:"number"`
		}
		if err := json.Unmarshal(e.Data, &ev); err != nil {
			return c, fmt.Errorf("commands: decode %s: %w", e.Type, err)
		}
		c = keyCounter{version: e.StreamVersion, number: max(c.number, ev.Number)}
	}
	k.remember(companyID, c)
	return c, nil
}

// remember records c unless the process knows a later version already.
func (k *keyCounters) remember(companyID string, c keyCounter) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.m == nil {
		k.m = map[string]keyCounter{}
	}
	if c.version > k.m[companyID].version {
		k.m[companyID] = c
	}
}
