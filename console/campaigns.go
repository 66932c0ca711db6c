package console

import (
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/clientele/clientele/domain"
	"github.com/clientele/clientele/domain/campaign"
	"github.com/clientele/clientele/readmodels"
)

// The campaigns pages read what GET /api/beta/campaigns/ reads, with its
// parameters read as it reads them (the host's CampaignStatsQuery): the figures
// the campaign_stats projection keeps. A campaign's page charts its
// funnel, its conversions day by day over the window (from the
// conversions the projection keeps, readmodels.Campaigns.
// CampaignSalesDays), and their revenue by product category and by
// campaign product.

// maxDayBars bounds the bars of the sales over time: a longer window
// chosen by dates is charted by spans of several days.
const maxDayBars = 62

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
	q, err := c.srv.CampaignStatsQuery(g.Request, co.ID, co.Location())
	if err != nil {
		return err
	}
	page, err := c.app.Queries.Campaigns.CampaignStats(g.Request.Context(), q)
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
			r.Sales, r.Revenue = formatCount(float64(s.Sales.TotalSales)), formatMoney(s.Sales.TotalRevenue, currencyOf(companyOf(g)))
		}
		v.Campaigns = append(v.Campaigns, r)
	}
	if page.Next != "" {
		next := url.Values{"from": {c.srv.CampaignStatsNext(page.Next)}}
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
	// DayRevenue and DaySales are the conversions over the window, per
	// day (or per span of days), shown when HasDays.
	DayRevenue, DaySales barChart
	HasDays              bool
	Figures              []fieldRow
	Events               []fieldRow
	// Window is the sales window shown, and the form's values.
	Window, SalesStart, SalesEnd string
}

// handleCampaign shows a campaign's figures: its funnel (sent, delivered,
// opens, clicks) and its sales over the window, day by day, as charts.
// sales_start and sales_end (dates) choose the window, as on
// GET /api/beta/campaigns/.
func (c *Console) handleCampaign(g *gin.Context) error {
	co := companyOf(g)
	q, err := c.srv.CampaignStatsQuery(g.Request, co.ID, co.Location())
	if err != nil {
		return err
	}
	q.Keys, q.After, q.Limit = []string{g.Param("key")}, "", 1
	page, err := c.app.Queries.Campaigns.CampaignStats(g.Request.Context(), q)
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
		v.Funnel = newBarChart("funnel", "Funnel", []chartSeries{{Name: "events", Class: "chart-main"}}, points, formatCount)
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
			{Name: "revenue", Value: formatMoney(s.Sales.TotalRevenue, currencyOf(companyOf(g)))},
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
		w, own := campaign.WindowOf(cs.Campaign.ActivatedAt)
		if q.Sales != nil {
			w = *q.Sales
		}
		days, err := c.app.Queries.Campaigns.CampaignSalesDays(g.Request.Context(), readmodels.SalesDaysQuery{
			CompanyID: co.ID, Key: cs.Campaign.Key, Location: co.Location(), Sales: q.Sales})
		if err != nil {
			return err
		}
		v.HasDays = true
		v.DayRevenue, v.DaySales = dayCharts(w, days, co.Location())
		if q.Sales != nil || own {
			v.Window = w.Start.In(co.Location()).Format("2006-01-02") + " to " + w.End.In(co.Location()).Format("2006-01-02")
		} else {
			v.Window = "the campaign's own window"
		}
	}
	c.render(g, http.StatusOK, "campaign", cs.Campaign.Name, "campaigns", v)
	return nil
}

// dayCharts charts a campaign's conversions over the window w: the
// revenue and the number of converted sales of each of its days (dates
// in loc), days without any included. A window chosen by dates may be
// long, or open at one end: it is narrowed to the days of the
// conversions when longer than maxDayBars days, and then charted by
// spans of several days if still longer.
func dayCharts(w campaign.Window, days []readmodels.SalesDay, loc *time.Location) (revenue, sales barChart) {
	first, last := dateOf(w.Start, loc), dateOf(w.End, loc)
	if daysBetween(first, last) >= maxDayBars && len(days) > 0 {
		first = later(first, days[0].Day)
		last = earlier(last, days[len(days)-1].Day)
	}
	n := daysBetween(first, last) + 1
	span := max(1, (n+maxDayBars-1)/maxDayBars)
	var revenuePoints, salesPoints []chartPoint
	if n > 0 {
		bars := (n + span - 1) / span
		rev, cnt := make([]float64, bars), make([]float64, bars)
		for _, d := range days {
			if i := daysBetween(first, d.Day); i >= 0 && i < n {
				rev[i/span] += float64(d.Revenue)
				cnt[i/span] += float64(d.Sales)
			}
		}
		for i := range bars {
			day := first.AddDate(0, 0, i*span)
			label := day.Format("Jan 2")
			if span == 1 && i > 0 && day.Day() != 1 {
				label = strconv.Itoa(day.Day()) // the month is on the first bar and where it changes
			}
			revenuePoints = append(revenuePoints, chartPoint{Label: label, Values: []float64{rev[i]}})
			salesPoints = append(salesPoints, chartPoint{Label: label, Values: []float64{cnt[i]}})
		}
	}
	per := "per day"
	if span > 1 {
		per = "per " + strconv.Itoa(span) + " days"
	}
	revenue = newBarChart("sales-revenue-days", "Revenue of the conversions "+per, []chartSeries{{Name: "revenue", Class: "chart-main"}}, revenuePoints, formatMinor)
	sales = newBarChart("sales-count-days", "Converted sales "+per, []chartSeries{{Name: "sales", Class: "chart-main"}}, salesPoints, formatCount)
	return revenue, sales
}

// dateOf is t's date in loc, at midnight there.
func dateOf(t time.Time, loc *time.Location) time.Time {
	y, m, d := t.In(loc).Date()
	return time.Date(y, m, d, 0, 0, 0, 0, loc)
}

// daysBetween counts the days from the date a to the date b (both at
// midnight in one location), negative when b is before a. Dates are
// compared as such, so that a day of 23 or 25 hours counts one.
func daysBetween(a, b time.Time) int {
	ua := time.Date(a.Year(), a.Month(), a.Day(), 0, 0, 0, 0, time.UTC).Unix()
	ub := time.Date(b.Year(), b.Month(), b.Day(), 0, 0, 0, 0, time.UTC).Unix()
	return int((ub - ua) / (24 * 60 * 60)) // seconds, not a Duration: a window may span millennia
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

func earlier(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}
