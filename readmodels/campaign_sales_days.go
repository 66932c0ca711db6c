package readmodels

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/clientele/clientele/domain/campaign"
)

// SalesDay is one day of a campaign's conversions (docs/campaigns.md,
// The figures): how many sales converted that day and their revenue, in
// minor units of the company's currency. Summed over the days, they are
// the statistics' sales_for_conversion and total_revenue.
type SalesDay struct {
	// Day is the date, at midnight in the location asked.
	Day     time.Time
	Sales   int64
	Revenue int64
}

// SalesDaysQuery asks for a campaign's conversions by day.
type SalesDaysQuery struct {
	CompanyID, Key string
	// Location is the company's time zone: the days are dates there.
	Location *time.Location
	// Sales, when set, is the window instead of the campaign's own, as
	// for StatsQuery.Sales.
	Sales *campaign.Window
}

// CampaignSalesDays returns a campaign's conversions summed per day,
// oldest first; days without any are left out. In the campaign's own
// window they are read from the conversions the statistics keep
// (campaign_stats_conversions, one row per converted sale with its date
// and revenue: one indexed query, however large the company); in a
// window asked for, they are decided as CampaignStats decides them there,
// from the campaign's members and their sales. A campaign without
// statistics (never activated, EXT) has none in its own window.
func (q *Campaigns) CampaignSalesDays(ctx context.Context, sq SalesDaysQuery) ([]SalesDay, error) {
	loc := sq.Location
	if loc == nil {
		loc = time.UTC
	}
	if sq.Sales != nil {
		return q.windowSalesDays(ctx, sq, loc)
	}
	rows, err := q.db.Query(ctx, `SELECT date_trunc('day', sale_date AT TIME ZONE $3) AS day, count(*), sum(revenue)::bigint
		FROM campaign_stats_conversions WHERE company_id = $1 AND campaign_key = $2
		GROUP BY day ORDER BY day`, sq.CompanyID, sq.Key, loc.String())
	if err != nil {
		return nil, fmt.Errorf("readmodels: campaign sales days: %w", err)
	}
	days, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (SalesDay, error) {
		var d SalesDay
		var day time.Time
		err := row.Scan(&day, &d.Sales, &d.Revenue)
		// The day comes back as a timestamp without time zone, read as
		// UTC: its fields are the date in loc.
		d.Day = time.Date(day.Year(), day.Month(), day.Day(), 0, 0, 0, 0, loc)
		return d, err
	})
	if err != nil {
		return nil, fmt.Errorf("readmodels: campaign sales days: %w", err)
	}
	return days, nil
}

// windowSalesDays sums per day the conversions of a campaign in a window
// of its own (windowFigures).
func (q *Campaigns) windowSalesDays(ctx context.Context, sq SalesDaysQuery, loc *time.Location) ([]SalesDay, error) {
	figures, err := q.windowFigures(ctx, sq.CompanyID, sq.Key, *sq.Sales)
	if err != nil {
		return nil, err
	}
	byDay := map[time.Time]*SalesDay{}
	for _, f := range figures {
		for _, cv := range f.Conversions {
			y, m, d := cv.Date.In(loc).Date()
			day := time.Date(y, m, d, 0, 0, 0, 0, loc)
			sd := byDay[day]
			if sd == nil {
				sd = &SalesDay{Day: day}
				byDay[day] = sd
			}
			sd.Sales++
			sd.Revenue += cv.Revenue
		}
	}
	days := make([]SalesDay, 0, len(byDay))
	for _, sd := range byDay {
		days = append(days, *sd)
	}
	slices.SortFunc(days, func(a, b SalesDay) int { return a.Day.Compare(b.Day) })
	return days, nil
}
