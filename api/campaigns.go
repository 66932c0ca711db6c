package api

import (
	"encoding/json"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/clientele/clientele/commands"
	"github.com/clientele/clientele/domain/campaign"
	"github.com/clientele/clientele/readmodels"
)

// campaignJSON is a campaign as the management endpoints answer it
// (readmodels.CampaignJSON: the datasync messages of campaigns hold it too).
type campaignJSON = readmodels.CampaignJSON

func newCampaignJSON(c campaign.Campaign) campaignJSON { return readmodels.NewCampaignJSON(c) }

// handleListCampaigns serves GET /api/campaigns/: the company's campaigns,
// oldest first, as {"campaigns": [...], "next_url": "..."}, paged as
// retrieval is (limit, cursor; next_url while more follow) and filtered
// by state and kind.
func (s *Server) handleListCampaigns(c *gin.Context) error {
	p, _ := principalOf(c)
	q, err := campaignQuery(c.Request, p.CompanyID)
	if err != nil {
		return err
	}
	page, err := s.campaigns.Campaigns(c.Request.Context(), q)
	if err != nil {
		return err
	}
	list := make([]campaignJSON, len(page.Campaigns))
	for i, cp := range page.Campaigns {
		list[i] = newCampaignJSON(cp)
	}
	body := gin.H{"campaigns": list}
	if page.Next != "" {
		body["next_url"] = nextURL(c.Request, encodeCursor(page.Next))
	}
	c.JSON(http.StatusOK, body)
	return nil
}

// campaignParams are the query parameters of the list (and the token's,
// access-token); any other is 400, as an unknown body field is: a filter
// misspelt would list everything.
var campaignParams = []string{"limit", "cursor", "from", "state", "kind"}

func campaignQuery(r *http.Request, companyID string) (readmodels.CampaignQuery, error) {
	q := readmodels.CampaignQuery{CompanyID: companyID}
	params, err := onlyParams(r.URL, campaignParams)
	if err != nil {
		return q, err
	}
	if q.Limit, err = limitParam(params, readmodels.DefaultLimit, readmodels.MaxLimit); err != nil {
		return q, err
	}
	if q.After, err = cursorParam(params); err != nil {
		return q, err
	}
	if v := params.Get("state"); v != "" {
		if q.State = campaign.State(v); !q.State.Valid() {
			return q, invalidParam("state", "must be draft, active, paused or archived")
		}
	}
	if v := params.Get("kind"); v != "" {
		if q.Kind = campaign.Kind(v); !q.Kind.Valid() {
			return q, invalidParam("kind", "must be email, automated-email, sms, automated-sms or EXT")
		}
	}
	return q, nil
}

// handleCreateCampaign serves POST /api/campaigns/ (staff role): a new
// campaign, under the campaign_key given or a generated CA-<n>.
func (s *Server) handleCreateCampaign(c *gin.Context) error {
	in, err := campaignInput(c)
	if err != nil {
		return err
	}
	p, _ := principalOf(c)
	cp, err := s.commands.CreateCampaign.Handle(commandContext(c), commands.CreateCampaign{Principal: p, Input: in})
	if err != nil {
		return err
	}
	return s.answerCampaign(c, cp.Key)
}

// handleGetCampaign serves GET /api/campaigns/<campaign_key>/.
func (s *Server) handleGetCampaign(c *gin.Context) error {
	return s.answerCampaign(c, c.Param("key"))
}

// handlePatchCampaign serves PATCH /api/campaigns/<campaign_key>/ (staff
// role): the fields given change, state by the allowed moves; absent or
// null fields stay as they are.
func (s *Server) handlePatchCampaign(c *gin.Context) error {
	in, err := campaignInput(c)
	if err != nil {
		return err
	}
	p, _ := principalOf(c)
	key := c.Param("key")
	if _, err := s.commands.UpdateCampaign.Handle(commandContext(c), commands.UpdateCampaign{Principal: p, Key: key, Input: in}); err != nil {
		return err
	}
	return s.answerCampaign(c, key)
}

// answerCampaign answers {"campaign": {...}} from the read model, which is
// inline: it holds a change as soon as its command returns, and an answer
// to a POST or PATCH is then exactly what a GET answers.
func (s *Server) answerCampaign(c *gin.Context, key string) error {
	p, _ := principalOf(c)
	cp, err := s.campaigns.Campaign(c.Request.Context(), p.CompanyID, key)
	if err != nil {
		return err
	}
	c.JSON(http.StatusOK, gin.H{"campaign": newCampaignJSON(cp)})
	return nil
}

// campaignInput reads a campaign body; naive datetimes are in the
// company's time zone.
func campaignInput(c *gin.Context) (campaign.Input, error) {
	var raw json.RawMessage
	if err := decodeJSON(c.Request, &raw, false); err != nil {
		return campaign.Input{}, err
	}
	co, _ := companyOf(c)
	return campaign.ParseInput(raw, co.Location())
}
