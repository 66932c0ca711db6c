package systemtest_test

import (
	"math"
	"net/http"
	"strconv"
	"testing"

	"github.com/clientele/clientele/api"
	"github.com/clientele/clientele/app"
	"github.com/clientele/clientele/eventstore/postgres"
	"github.com/clientele/clientele/projections/campaignstats"
	"github.com/clientele/clientele/projections/datasync"
	retrievalproj "github.com/clientele/clientele/projections/retrieval"
)

// TestCampaignDatasync: a datasync datatarget of campaigns takes each
// campaign, with its statistics as GET /api/campaign/actions/ answers
// them, after each change of the campaign or of its figures, once: a
// from_start one begins with every campaign, the campaign's changes and
// an import of its activity follow, and neither a rebuild of the
// statistics nor one of datasync adds or drops a message.
func TestCampaignDatasync(t *testing.T) {
	e := newEnv(t, func(c *api.Config, _ *app.Application) { c.RateLimit = math.Inf(1) })
	e.runProjections(retrievalproj.NewCustomers(e.keys), retrievalproj.NewEvents(e.keys), datasync.NewDatasync(e.keys, postgres.EventLog{}),
		campaignstats.NewCampaignStats())
	e.runImports()
	token := e.userToken(e.admin, acmeHost)
	e.importAll(token, "/api/customers/upload/", `[{"external_id": "A"}, {"external_id": "B"}]`)
	e.createCampaign(token, map[string]any{"campaign_key": "fresh", "kind": "email", "name": "Fresh", "state": "active",
		"activated_at": "2025-01-01T00:00:00Z"})
	e.createCampaign(token, map[string]any{"campaign_key": "later", "kind": "email", "name": "Later"})
	e.waitProjections()

	dash := e.createDatasync(token, "dashboard", map[string]any{"datatype": "campaigns"})["id"].(string)
	all := e.createDatasync(token, "all", map[string]any{"datatype": "campaigns", "from_start": true, "fields": []string{"name"}})["id"].(string)
	e.waitProjections()
	if p := e.syncMessages(token, dash); len(p.Messages) != 0 {
		t.Errorf("a new datatarget without from_start: %+v", p.Messages)
	}
	p := e.syncMessages(token, all)
	if len(p.Messages) != 2 || p.LastMessageNumber != 2 {
		t.Fatalf("from_start: %+v, want both campaigns", p)
	}
	for i, key := range []string{"fresh", "later"} {
		m := p.Messages[i]
		if m.Datatype != "campaigns" || m.Data["campaign_key"] != key || len(m.Data) != 2 || m.Data["name"] == nil {
			t.Errorf("from_start message %d: %+v, want %s with campaign_key and name only", i, m, key)
		}
	}

	// Activity of fresh: one message, the campaign with its new figures.
	e.importAll(token, "/api/events/upload/", `[
		{"type": "MAIL_SENT", "date": "2025-01-01T10:00:00Z", "customer_id": "A", "campaign_key": "fresh"},
		{"type": "MAIL_OPEN", "date": "2025-01-02T10:00:00Z", "customer_id": "A", "campaign_key": "fresh"},
		{"type": "MAIL_SENT", "date": "2025-01-01T10:00:00Z", "customer_id": "B", "campaign_key": "fresh"}]`)
	// A change of a campaign's attributes: the campaign, stats null (a
	// draft has none).
	e.patchCampaign(token, "later", map[string]any{"name": "Later on"}).wantStatus(t, http.StatusOK)
	e.waitProjections()
	p = e.syncMessages(token, dash)
	if len(p.Messages) != 2 || p.LastMessageNumber != 2 {
		t.Fatalf("messages %+v, want fresh's figures, then later's name", p)
	}
	fresh, later := p.Messages[0].Data, p.Messages[1].Data
	stats, _ := fresh["stats"].(map[string]any)
	if fresh["campaign_key"] != "fresh" || fresh["name"] != "Fresh" || stats == nil || stats["audience_size"] != 2.0 ||
		stats["audience_with_events"] != 1.0 || stats["audience_no_reaction"] != 1.0 || stats["cache_modified_at"] == nil {
		t.Errorf("fresh after its activity: %v", fresh)
	}
	if later["campaign_key"] != "later" || later["name"] != "Later on" || later["stats"] != nil {
		t.Errorf("later after its change: %v", later)
	}
	first, _ := strconv.ParseInt(p.Messages[0].UpdateID, 10, 64)
	second, _ := strconv.ParseInt(p.Messages[1].UpdateID, 10, 64)
	if first <= 0 || second <= first {
		t.Errorf("update ids %s, %s: want log positions, in order", p.Messages[0].UpdateID, p.Messages[1].UpdateID)
	}
	// The answer of the statistics endpoint is the message's data.
	answer := statsOf(t, e.campaignStats(token))["fresh"]
	if answer == nil || float64(answer.AudienceSize) != stats["audience_size"] || float64(answer.AudienceWithEvents) != stats["audience_with_events"] {
		t.Errorf("actions answer %+v, message %v", answer, stats)
	}
	if p := e.syncMessages(token, all); len(p.Messages) != 4 {
		t.Errorf("from_start datatarget: %d messages, want 4", len(p.Messages))
	}

	// Rebuilds send nothing again and drop nothing; the next change is
	// one message more.
	e.rebuildAll(campaignstats.NewCampaignStats(), datasync.NewDatasync(e.keys, postgres.EventLog{}))
	e.waitProjections()
	if p := e.syncMessages(token, dash); len(p.Messages) != 2 {
		t.Errorf("after rebuilds: %d messages, want 2", len(p.Messages))
	}
	e.patchCampaign(token, "fresh", map[string]any{"state": "paused"}).wantStatus(t, http.StatusOK)
	e.waitProjections()
	p = e.syncMessages(token, dash)
	if len(p.Messages) != 3 || p.Messages[2].Data["state"] != "paused" || p.Messages[2].Data["stats"] == nil {
		t.Errorf("after a pause: %+v", p.Messages)
	}
	var listed struct {
		Datatarget map[string]any `json:"datatarget"`
	}
	e.do(http.MethodGet, "/api/datatargets/"+dash+"/", bearer(token)).decode(t, &listed)
	if listed.Datatarget["last_message_number"] != 3.0 {
		t.Errorf("datatarget %v, want last_message_number 3", listed.Datatarget)
	}
}
