package api

import (
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/clientele/clientele/domain/campaign"
	"github.com/clientele/clientele/domain/values"
	"github.com/clientele/clientele/readmodels"
)

// campaignStatsJSON is the interface's campaign statistics object.
type campaignStatsJSON = readmodels.CampaignStatsJSON

// campaignStatsPage is the answer of the statistics endpoints, in the
// order decisions.md gives; next only when more campaigns follow.
type campaignStatsPage struct {
	Order     string              `json:"order"`
	Limit     int                 `json:"limit"`
	Next      string              `json:"next,omitempty"`
	Campaigns []campaignStatsJSON `json:"campaigns"`
}

// statsParams are the query parameters of GET /api/campaign/actions/; the
// beta endpoint adds betaParams. Any other is 400, as on the campaigns
// list: a misspelt keys would answer every campaign.
var (
	statsParams = []string{"keys", "limit", "order", "from"}
	betaParams  = []string{"sales_start", "sales_end"}
)

// handleCampaignStats serves GET /api/campaign/actions/ (and
// /campaign/actions/): the company's campaigns with their statistics,
// newest first by default, as {"order", "limit", "next", "campaigns"}.
func (s *Server) handleCampaignStats(c *gin.Context) error {
	return s.answerCampaignStats(c, false)
}

// handleBetaCampaignStats serves GET /api/beta/campaigns/: the same, with
// sales_start and sales_end (dates) as the window of the sales figures.
func (s *Server) handleBetaCampaignStats(c *gin.Context) error {
	return s.answerCampaignStats(c, true)
}

func (s *Server) answerCampaignStats(c *gin.Context, beta bool) error {
	p, _ := principalOf(c)
	co, _ := companyOf(c)
	q, err := statsQuery(c.Request, p.CompanyID, co.Location(), beta)
	if err != nil {
		return err
	}
	page, err := s.campaigns.CampaignStats(c.Request.Context(), q)
	if err != nil {
		return err
	}
	list := make([]campaignStatsJSON, len(page.Campaigns))
	for i, cs := range page.Campaigns {
		list[i] = campaignStatsJSON{CampaignJSON: newCampaignJSON(cs.Campaign), Stats: cs.Stats}
	}
	order := "descending"
	if q.Ascending {
		order = "ascending"
	}
	body := campaignStatsPage{Order: order, Limit: q.Limit, Campaigns: list}
	if page.Next != "" {
		body.Next = encodeCursor(page.Next)
	}
	c.JSON(http.StatusOK, body)
	return nil
}

func statsQuery(r *http.Request, companyID string, loc *time.Location, beta bool) (readmodels.StatsQuery, error) {
	q := readmodels.StatsQuery{CompanyID: companyID, Limit: readmodels.StatsDefaultLimit, Location: loc}
	known := statsParams
	if beta {
		known = append(slices.Clone(statsParams), betaParams...)
	}
	params, err := onlyParams(r.URL, known)
	if err != nil {
		return q, err
	}
	// keys is comma-separated, and may also be repeated.
	for _, v := range params["keys"] {
		for _, k := range strings.Split(v, ",") {
			if k = strings.TrimSpace(k); k != "" && !slices.Contains(q.Keys, k) {
				q.Keys = append(q.Keys, k)
			}
		}
	}
	if q.Limit, err = limitParam(params, q.Limit, readmodels.StatsMaxLimit); err != nil {
		return q, err
	}
	if v, ok := params["order"]; ok {
		switch strings.TrimSpace(v[0]) {
		case "ascending":
			q.Ascending = true
		case "descending":
		default:
			return q, invalidParam("order", "must be ascending or descending")
		}
	}
	if v := params.Get("from"); v != "" {
		if q.After, err = decodeCursor(v); err != nil || q.After == "" {
			return q, invalidParam("from", "is not a next of this endpoint")
		}
	}
	if beta {
		w, err := salesWindow(params, loc)
		if err != nil {
			return q, err
		}
		q.Sales = w
	}
	return q, nil
}

// salesWindow reads sales_start and sales_end, dates in the company's
// time zone, both included; nil when neither is given (each campaign's
// own window). One alone is bounded by the other end of time.
func salesWindow(params url.Values, loc *time.Location) (*campaign.Window, error) {
	start, end := params.Get("sales_start"), params.Get("sales_end")
	if start == "" && end == "" {
		return nil, nil
	}
	w := campaign.Window{Start: time.Date(values.MinYear, 1, 1, 0, 0, 0, 0, time.UTC),
		End: time.Date(values.MaxYear, 12, 31, 23, 59, 59, 999999000, time.UTC)}
	for _, b := range []struct {
		name, v string
		at      *time.Time
		next    int
	}{{"sales_start", start, &w.Start, 0}, {"sales_end", end, &w.End, 1}} {
		if b.v == "" {
			continue
		}
		d, reason := values.Date(b.v)
		if reason != "" {
			return nil, invalidParam(b.name, "%s", reason)
		}
		t, _ := time.ParseInLocation(values.DateLayout, d, loc)
		// The end date is included: up to the last microsecond before the
		// next day.
		*b.at = t.AddDate(0, 0, b.next).Add(-time.Duration(b.next) * time.Microsecond).UTC()
	}
	if w.End.Before(w.Start) {
		return nil, invalidParam("sales_end", "must not be before sales_start")
	}
	return &w, nil
}
