package console

import (
	"net/http"
	"net/url"

	"github.com/gin-gonic/gin"

	"github.com/clientele/clientele/api"
	"github.com/clientele/clientele/domain"
	"github.com/clientele/clientele/readmodels"
)

// The campaigns pages read what GET /api/beta/campaigns/ reads, with its
// parameters read as it reads them (api.CampaignStatsQuery): the figures
// the campaign_stats projection keeps. A campaign's page charts its
// funnel and its conversions' revenue by product category; the
// projection keeps totals over the window, not a series per day, so the
// sales are charted by category and product, not over time.

// campaignsView is the list of campaigns with their figures.
type campaignsView struct {
	Campaigns []campaignRow
	Next      string
}

type campaignRow struct {
	Key, Name, Kind, State, Activated string
	HasStats                          bool
	Audience, Sent, Opens, Clicks     string
	Sales, Revenue                    string
}

func (c *Console) handleCampaigns(g *gin.Context) error {
	co := companyOf(g)
	q, err := api.CampaignStatsQuery(g.Request, co.ID, co.Location())
	if err != nil {
		return err
	}
	page, err := c.deps.Campaigns.CampaignStats(g.Request.Context(), q)
	if err != nil {
		return err
	}
	v := campaignsView{}
	for _, cs := range page.Campaigns {
		r := campaignRow{Key: cs.Campaign.Key, Name: cs.Campaign.Name, Kind: string(cs.Campaign.Kind),
			State: string(cs.Campaign.State), Activated: whenZero(cs.Campaign.ActivatedAt)}
		if s := cs.Stats; s != nil {
			ev := eventCounts(s)
			r.HasStats = true
			r.Audience = formatCount(float64(s.AudienceSize))
			r.Sent, r.Opens, r.Clicks = formatCount(float64(ev["sent"])), formatCount(float64(ev["opens"])), formatCount(float64(ev["clicks"]))
			r.Sales, r.Revenue = formatCount(float64(s.Sales.TotalSales)), formatMinor(float64(s.Sales.TotalRevenue))
		}
		v.Campaigns = append(v.Campaigns, r)
	}
	if page.Next != "" {
		next := url.Values{"from": {api.CampaignStatsNext(page.Next)}}
		if o := g.Query("order"); o != "" {
			next.Set("order", o)
		}
		v.Next = Prefix + "/campaigns?" + next.Encode()
	}
	c.render(g, http.StatusOK, "campaigns", "Campaigns", "campaigns", v)
	return nil
}

func eventCounts(s *readmodels.Stats) map[string]int64 {
	out := map[string]int64{}
	for _, e := range s.Events {
		out[e.Name] = e.Count
	}
	return out
}

// funnelSteps are the funnel's bars, in order.
var funnelSteps = []string{"sent", "delivered", "opens", "clicks"}

// campaignView is a campaign's page.
type campaignView struct {
	Key, Name, Kind, State, Activated, Created string
	Stats                                      *readmodels.Stats
	Funnel, Categories, Products               barChart
	Figures                                    []fieldRow
	Events                                     []fieldRow
	// Window is the sales window shown, and the form's values.
	Window, SalesStart, SalesEnd string
}

// handleCampaign shows a campaign's figures: its funnel (sent, delivered,
// opens, clicks) and its sales in the window as charts. sales_start and
// sales_end (dates) choose the window, as on GET /api/beta/campaigns/.
func (c *Console) handleCampaign(g *gin.Context) error {
	co := companyOf(g)
	q, err := api.CampaignStatsQuery(g.Request, co.ID, co.Location())
	if err != nil {
		return err
	}
	q.Keys, q.After, q.Limit = []string{g.Param("key")}, "", 1
	page, err := c.deps.Campaigns.CampaignStats(g.Request.Context(), q)
	if err != nil {
		return err
	}
	if len(page.Campaigns) == 0 {
		return domain.Errorf(domain.NotFound, "no such campaign")
	}
	cs := page.Campaigns[0]
	v := campaignView{Key: cs.Campaign.Key, Name: cs.Campaign.Name, Kind: string(cs.Campaign.Kind), State: string(cs.Campaign.State),
		Activated: whenZero(cs.Campaign.ActivatedAt), Created: cs.Campaign.CreatedAt.UTC().Format("2006-01-02 15:04:05 UTC"),
		Stats: cs.Stats, SalesStart: g.Query("sales_start"), SalesEnd: g.Query("sales_end")}
	if s := cs.Stats; s != nil {
		ev := eventCounts(s)
		var points []chartPoint
		for _, step := range funnelSteps {
			points = append(points, chartPoint{Label: step, Values: []float64{float64(ev[step])}})
		}
		v.Funnel = newBarChart("funnel", "Funnel", []chartSeries{{Name: "customers", Class: "chart-main"}}, points, formatCount)
		for _, e := range s.Events {
			v.Events = append(v.Events, fieldRow{Name: e.Name, Value: formatCount(float64(e.Count))})
		}
		v.Figures = []fieldRow{
			{Name: "audience", Value: formatCount(float64(s.AudienceSize))},
			{Name: "with events", Value: formatCount(float64(s.AudienceWithEvents))},
			{Name: "with sales", Value: formatCount(float64(s.AudienceWithSales))},
			{Name: "unreachable", Value: formatCount(float64(s.AudienceUnreachable))},
			{Name: "no reaction", Value: formatCount(float64(s.AudienceNoReaction))},
			{Name: "sales", Value: formatCount(float64(s.Sales.TotalSales))},
			{Name: "revenue", Value: formatMinor(float64(s.Sales.TotalRevenue))},
			{Name: "products per sale", Value: formatCount(s.Sales.AverageProductsCount)},
		}
		var cats []chartPoint
		for _, cat := range s.Sales.ProductCategories {
			cats = append(cats, chartPoint{Label: cat.Title, Values: []float64{float64(cat.Revenue)}})
		}
		v.Categories = newBarChart("categories", "Revenue by product category", []chartSeries{{Name: "revenue", Class: "chart-main"}}, cats, formatMinor)
		v.Products = newBarChart("products", "Revenue of the campaign's products and of others", []chartSeries{{Name: "revenue", Class: "chart-main"}},
			[]chartPoint{
				{Label: "campaign products", Values: []float64{float64(s.Sales.CampaignProductRevenue)}},
				{Label: "other products", Values: []float64{float64(s.Sales.OtherProductRevenue)}},
			}, formatMinor)
		switch {
		case q.Sales != nil:
			v.Window = q.Sales.Start.In(co.Location()).Format("2006-01-02") + " to " + q.Sales.End.In(co.Location()).Format("2006-01-02")
		case s.DateRange != nil:
			v.Window = s.DateRange.Start.In(co.Location()).Format("2006-01-02") + " to " + s.DateRange.End.In(co.Location()).Format("2006-01-02")
		default:
			v.Window = "the campaign's own window"
		}
	}
	c.render(g, http.StatusOK, "campaign", cs.Campaign.Name, "campaigns", v)
	return nil
}
