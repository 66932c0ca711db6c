package commands_test

import (
	"context"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/clientele/clientele/commands"
	"github.com/clientele/clientele/domain"
	"github.com/clientele/clientele/domain/access"
	"github.com/clientele/clientele/domain/campaign"
)

// campaignInput parses a body for a command.
func campaignInput(t *testing.T, body string) campaign.Input {
	t.Helper()
	in, err := campaign.ParseInput([]byte(body), time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	return in
}

// TestCreateCampaignGeneratesKeys: two nodes (two handler sets on one
// store, each with its own memory of the keys stream) generating at once
// give distinct consecutive keys, skip a key given by a client, and a
// failed creation uses no number.
func TestCreateCampaignGeneratesKeys(t *testing.T) {
	a, store := newCommands(t)
	b := commands.New(store, time.Now)
	co := mustCompany(t, a, "acme")
	p := access.System(co.ID)
	ctx := context.Background()
	in := campaignInput(t, `{"kind": "email", "name": "n"}`)

	if _, err := a.CreateCampaign.Handle(ctx, commands.CreateCampaign{Principal: p, Input: campaignInput(t, `{"kind": "fax", "name": "n"}`)}); domain.ErrorCode(err) != domain.Validation {
		t.Fatalf("bad kind: %v", err)
	}
	if _, err := b.CreateCampaign.Handle(ctx, commands.CreateCampaign{Principal: p, Input: campaignInput(t, `{"campaign_key": "CA-3", "kind": "sms", "name": "n"}`)}); err != nil {
		t.Fatal(err)
	}
	var (
		mu   sync.Mutex
		keys []string
		wg   sync.WaitGroup
	)
	for i := range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h := a.CreateCampaign
			if i%2 == 1 {
				h = b.CreateCampaign
			}
			c, err := h.Handle(ctx, commands.CreateCampaign{Principal: p, Input: in})
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			keys = append(keys, c.Key)
			mu.Unlock()
		}()
	}
	wg.Wait()
	sort.Strings(keys)
	want := []string{"CA-1", "CA-10", "CA-11", "CA-2", "CA-4", "CA-5", "CA-6", "CA-7", "CA-8", "CA-9"}
	if !slices.Equal(keys, want) {
		t.Errorf("keys %v, want %v", keys, want)
	}
	evs, err := store.ReadStream(ctx, campaign.KeysStream(co.ID), 0)
	if err != nil || len(evs) != 10 {
		t.Errorf("keys stream: %d events, %v", len(evs), err)
	}
	// The other node catches up on what it did not see.
	c, err := a.CreateCampaign.Handle(ctx, commands.CreateCampaign{Principal: p, Input: in})
	if err != nil || c.Key != "CA-12" {
		t.Errorf("next: %s %v", c.Key, err)
	}
}

func TestUpdateCampaign(t *testing.T) {
	cmds, store := newCommands(t)
	co := mustCompany(t, cmds, "acme")
	p := access.System(co.ID)
	ctx := context.Background()
	if _, err := cmds.CreateCampaign.Handle(ctx, commands.CreateCampaign{Principal: p, Input: campaignInput(t, `{"campaign_key": "K", "kind": "email", "name": "n"}`)}); err != nil {
		t.Fatal(err)
	}
	if _, err := cmds.CreateCampaign.Handle(ctx, commands.CreateCampaign{Principal: p, Input: campaignInput(t, `{"campaign_key": "K", "kind": "sms", "name": "m"}`)}); domain.ErrorCode(err) != domain.Conflict {
		t.Errorf("duplicate key: %v", err)
	}
	c, err := cmds.UpdateCampaign.Handle(ctx, commands.UpdateCampaign{Principal: p, Key: "K", Input: campaignInput(t, `{"state": "active", "name": "m"}`)})
	if err != nil || c.State != campaign.StateActive || c.Name != "m" {
		t.Fatalf("update: %+v %v", c, err)
	}
	// Nothing changes: nothing is appended.
	if _, err := cmds.UpdateCampaign.Handle(ctx, commands.UpdateCampaign{Principal: p, Key: "K", Input: campaignInput(t, `{"state": "active", "name": "m"}`)}); err != nil {
		t.Fatal(err)
	}
	evs, _ := store.ReadStream(ctx, campaign.Stream(co.ID, "K"), 0)
	if len(evs) != 3 || evs[0].Metadata.Actor != "system" {
		t.Errorf("%d events (want created, updated, activated): %+v", len(evs), evs)
	}
	for _, key := range []string{"nope", "not a key", ""} {
		if _, err := cmds.UpdateCampaign.Handle(ctx, commands.UpdateCampaign{Principal: p, Key: key, Input: campaignInput(t, `{"name": "x"}`)}); domain.ErrorCode(err) != domain.NotFound {
			t.Errorf("unknown campaign %q: %v", key, err)
		}
	}
	bare := access.Principal{CompanyID: co.ID, TokenID: "t"}
	if _, err := cmds.UpdateCampaign.Handle(ctx, commands.UpdateCampaign{Principal: bare, Key: "K", Input: campaignInput(t, `{"name": "x"}`)}); domain.ErrorCode(err) != domain.Forbidden {
		t.Errorf("a token without roles: %v", err)
	}
}
