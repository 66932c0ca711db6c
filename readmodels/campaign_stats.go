package readmodels

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/clientele/clientele/domain"
	"github.com/clientele/clientele/domain/campaign"
)

// Campaign statistics limits (GET /api/campaign/actions/).
const (
	StatsDefaultLimit = 30
	StatsMaxLimit     = 100
)

// UncategorisedTitle is the category of a product that has none.
const UncategorisedTitle = "Uncategorised"

// StatsQuery asks for one page of a company's campaigns with their
// statistics, by activated_at (created_at for the campaigns never
// activated), the key breaking ties.
type StatsQuery struct {
	CompanyID string
	// Keys, when not empty, keeps only these campaigns.
	Keys []string
	// Ascending orders oldest first; the default is newest first.
	Ascending bool
	// After is the Next of an earlier page; "" starts at the first.
	After string
	// Limit is the page size, 1 to StatsMaxLimit.
	Limit int
	// Location is the company's time zone: the sales date_range is dates
	// there.
	Location *time.Location
	// Sales, when set, is the window of the sales figures instead of each
	// campaign's own (the beta endpoint's sales_start and sales_end).
	Sales *campaign.Window
}

// StatsPage is one page of campaigns with their statistics.
type StatsPage struct {
	Campaigns []CampaignStats
	// Next is the After of the next page, "" on the last page.
	Next string
}

// CampaignStats is a campaign with its statistics (nil when it has none:
// a draft, or an EXT campaign).
type CampaignStats struct {
	Campaign campaign.Campaign
	Stats    *Stats
}

// Stats are a campaign's figures (docs/campaigns.md, Statistics), in the
// interface's order.
type Stats struct {
	// DateRange is the window, for automated campaigns only.
	DateRange           *TimeRange   `json:"date_range,omitempty"`
	AudienceSize        int64        `json:"audience_size"`
	AudienceWithEvents  int64        `json:"audience_with_events"`
	AudienceWithSales   int64        `json:"audience_with_sales"`
	SalesForConversion  int64        `json:"sales_for_conversion"`
	AudienceUnreachable int64        `json:"audience_unreachable"`
	AudienceNoReaction  int64        `json:"audience_no_reaction"`
	Events              []EventCount `json:"events"`
	Sales               SalesStats   `json:"sales"`
	CacheModifiedAt     *time.Time   `json:"cache_modified_at"`
}

// TimeRange is a span of instants.
type TimeRange struct {
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
}

// DateRange is a span of dates (YYYY-MM-DD).
type DateRange struct {
	Start string `json:"start"`
	End   string `json:"end"`
}

// EventCount is one entry of the events list.
type EventCount struct {
	Name  string `json:"name"`
	Count int64  `json:"count"`
}

// SalesStats are the figures of a campaign's conversions. Money is in
// minor units of the company's currency; counts of units are numbers
// with two decimals.
type SalesStats struct {
	// DateRange is the first and last conversion's dates; nil when none.
	DateRange              *DateRange        `json:"date_range"`
	TotalSales             int64             `json:"total_sales"`
	TotalRevenue           int64             `json:"total_revenue"`
	AverageProductsCount   float64           `json:"average_products_count"`
	TotalProductsCount     float64           `json:"total_products_count"`
	CampaignProductCount   float64           `json:"campaign_product_count"`
	CampaignProductRevenue int64             `json:"campaign_product_revenue"`
	OtherProductCount      float64           `json:"other_product_count"`
	OtherProductRevenue    int64             `json:"other_product_revenue"`
	ProductCategories      []CategoryFigures `json:"product_categories"`
}

// CategoryFigures are the conversions' rows of one category.
type CategoryFigures struct {
	Title    string  `json:"title"`
	Units    float64 `json:"units"`
	Revenue  int64   `json:"revenue"`
	Discount int64   `json:"discount"`
}

// statsTotals are a campaign's stored totals (or, with a window of its
// own, the ones computed for it).
type statsTotals struct {
	found                                        bool
	audience, unreachable, withEvents, withSales int64
	events                                       []int64
	sales, revenue, units                        int64
	modified                                     *time.Time
	first, last                                  *time.Time
	groups                                       []productGroup
}

// productGroup sums the conversions' rows of a campaign by category (the
// first of the product's, "" when none) and by whether the product is
// one of the campaign's.
type productGroup struct {
	title                    string
	featured                 bool
	units, revenue, discount int64
}

// CampaignStats returns a page of the company's campaigns with their
// statistics.
func (q *Campaigns) CampaignStats(ctx context.Context, sq StatsQuery) (StatsPage, error) {
	if sq.Limit < 1 || sq.Limit > StatsMaxLimit {
		return StatsPage{}, fmt.Errorf("readmodels: campaign stats: limit %d out of 1..%d", sq.Limit, StatsMaxLimit)
	}
	if sq.Location == nil {
		sq.Location = time.UTC
	}
	var afterAt *time.Time
	var afterKey string
	if sq.After != "" {
		at, key, err := parseStatsCursor(sq.After)
		if err != nil {
			return StatsPage{}, err
		}
		afterAt, afterKey = &at, key
	}
	dir, cmp := "DESC", "<"
	if sq.Ascending {
		dir, cmp = "ASC", ">"
	}
	keys := sq.Keys
	if keys == nil {
		keys = []string{}
	}
	rows, err := q.db.Query(ctx, `SELECT c.company_id, c.campaign_key, c.kind, c.state, c.name, c.utm_campaign,
			c.campaign_tags, c.folder, c.marketing_permission, c.product_ids, c.created_by, c.created_at, c.activated_at,
			c.updated_at, s.company_id IS NOT NULL, coalesce(s.audience_size, 0), coalesce(s.audience_unreachable, 0),
			coalesce(s.audience_with_events, 0), coalesce(s.audience_with_sales, 0), coalesce(s.events, '{}'),
			coalesce(s.total_sales, 0), coalesce(s.total_revenue, 0), coalesce(s.total_units, 0), s.modified_at,
			(SELECT min(v.sale_date) FROM campaign_stats_conversions v WHERE v.company_id = c.company_id AND v.campaign_key = c.campaign_key),
			(SELECT max(v.sale_date) FROM campaign_stats_conversions v WHERE v.company_id = c.company_id AND v.campaign_key = c.campaign_key)
		FROM campaigns c LEFT JOIN campaign_stats s ON s.company_id = c.company_id AND s.campaign_key = c.campaign_key
		WHERE c.company_id = $1 AND (cardinality($2::text[]) = 0 OR c.campaign_key = ANY($2))
			AND ($3::timestamptz IS NULL OR (coalesce(c.activated_at, c.created_at), c.campaign_key) `+cmp+` ($3, $4))
		ORDER BY coalesce(c.activated_at, c.created_at) `+dir+`, c.campaign_key `+dir+` LIMIT $5`,
		sq.CompanyID, keys, afterAt, afterKey, sq.Limit+1)
	if err != nil {
		return StatsPage{}, fmt.Errorf("readmodels: campaign stats: %w", err)
	}
	type found struct {
		c campaign.Campaign
		t statsTotals
	}
	list, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (found, error) {
		var f found
		var activated *time.Time
		c := &f.c
		err := row.Scan(&c.CompanyID, &c.Key, &c.Kind, &c.State, &c.Name, &c.UTMCampaign, &c.Tags, &c.Folder,
			&c.Permission, &c.ProductIDs, &c.CreatedBy, &c.CreatedAt, &activated, &c.UpdatedAt,
			&f.t.found, &f.t.audience, &f.t.unreachable, &f.t.withEvents, &f.t.withSales, &f.t.events,
			&f.t.sales, &f.t.revenue, &f.t.units, &f.t.modified, &f.t.first, &f.t.last)
		c.CreatedAt, c.UpdatedAt = c.CreatedAt.UTC(), c.UpdatedAt.UTC()
		if activated != nil {
			c.ActivatedAt = activated.UTC()
		}
		return f, err
	})
	if err != nil {
		return StatsPage{}, fmt.Errorf("readmodels: campaign stats: %w", err)
	}
	var page StatsPage
	if len(list) > sq.Limit {
		list = list[:sq.Limit]
		last := list[sq.Limit-1].c
		at := last.ActivatedAt
		if at.IsZero() {
			at = last.CreatedAt
		}
		page.Next = at.UTC().Format(time.RFC3339Nano) + " " + last.Key
	}
	var withStats []string
	for _, f := range list {
		if f.c.HasStats() {
			withStats = append(withStats, f.c.Key)
		}
	}
	groups, err := q.statsGroups(ctx, sq.CompanyID, withStats)
	if err != nil {
		return StatsPage{}, err
	}
	for _, f := range list {
		out := CampaignStats{Campaign: f.c}
		if f.c.HasStats() {
			t := f.t
			t.groups = groups[f.c.Key]
			if sq.Sales != nil {
				if t, err = q.windowTotals(ctx, f.c, t, *sq.Sales); err != nil {
					return StatsPage{}, err
				}
			}
			out.Stats = statsOf(f.c, t, sq.Location)
		}
		page.Campaigns = append(page.Campaigns, out)
	}
	return page, nil
}

// statsOf shapes a campaign's totals as its statistics.
func statsOf(c campaign.Campaign, t statsTotals, loc *time.Location) *Stats {
	s := &Stats{AudienceSize: t.audience, AudienceWithEvents: t.withEvents, AudienceWithSales: t.withSales,
		SalesForConversion: t.sales, AudienceUnreachable: t.unreachable,
		AudienceNoReaction: t.audience - t.withEvents - t.unreachable, Events: make([]EventCount, 0, campaign.NumFigures)}
	if c.Automated() {
		w, _ := campaign.WindowOf(c.ActivatedAt)
		s.DateRange = &TimeRange{Start: w.Start.UTC(), End: w.End.UTC()}
	}
	for i, name := range campaign.FigureNames {
		var n int64
		if i < len(t.events) {
			n = t.events[i]
		}
		s.Events = append(s.Events, EventCount{Name: name, Count: n})
	}
	if t.found && t.modified != nil {
		m := t.modified.UTC()
		s.CacheModifiedAt = &m
	}
	sales := SalesStats{TotalSales: t.sales, TotalRevenue: t.revenue, TotalProductsCount: float64(t.units) / 100,
		AverageProductsCount: campaign.AverageUnits(t.units, t.sales), ProductCategories: []CategoryFigures{}}
	if t.first != nil && t.last != nil {
		sales.DateRange = &DateRange{Start: t.first.In(loc).Format(time.DateOnly), End: t.last.In(loc).Format(time.DateOnly)}
	}
	byTitle := map[string]*CategoryFigures{}
	var campaignUnits, otherUnits int64
	for _, g := range t.groups {
		if g.featured {
			campaignUnits += g.units
			sales.CampaignProductRevenue += g.revenue
		} else {
			otherUnits += g.units
			sales.OtherProductRevenue += g.revenue
		}
		title := g.title
		if title == "" {
			title = UncategorisedTitle
		}
		cf := byTitle[title]
		if cf == nil {
			cf = &CategoryFigures{Title: title}
			byTitle[title] = cf
		}
		cf.Units += float64(g.units) / 100
		cf.Revenue += g.revenue
		cf.Discount += g.discount
	}
	sales.CampaignProductCount, sales.OtherProductCount = float64(campaignUnits)/100, float64(otherUnits)/100
	for _, cf := range byTitle {
		sales.ProductCategories = append(sales.ProductCategories, *cf)
	}
	slices.SortFunc(sales.ProductCategories, func(a, b CategoryFigures) int {
		if a.Revenue != b.Revenue {
			if a.Revenue > b.Revenue {
				return -1
			}
			return 1
		}
		return strings.Compare(a.Title, b.Title)
	})
	s.Sales = sales
	return s
}

// firstCategory is the SQL of a product's first category, trimmed; ""
// when it has none. A product's category is a string or a list.
const firstCategory = `coalesce(trim(CASE jsonb_typeof(pr.doc->'category')
	WHEN 'array' THEN pr.doc->'category'->>0 WHEN 'string' THEN pr.doc->>'category' END), '')`

// statsGroups sums the conversions' rows of the campaigns by category and
// by campaign product, with the products' categories and the campaigns'
// product_ids as they are now, in the database: a few rows per campaign
// come back.
func (q *Campaigns) statsGroups(ctx context.Context, companyID string, keys []string) (map[string][]productGroup, error) {
	out := map[string][]productGroup{}
	if len(keys) == 0 {
		return out, nil
	}
	// Each product row finds its product by the primary key, so that no
	// plan is worse than linear in the page's rows: with the products'
	// categories looked up once in a subquery joined back, a plan that
	// misjudges the rows (a generic plan of this prepared statement
	// estimates one) scanned that subquery again for every row: seconds
	// for a page of a few hundred products (measured, 2026-11-25).
	rows, err := q.db.Query(ctx, `SELECT p.campaign_key, `+firstCategory+`, p.external_id = ANY(c.product_ids),
			sum(p.units)::bigint, sum(p.revenue)::bigint, sum(p.discount)::bigint
		FROM campaign_stats_products p
		JOIN campaigns c ON c.company_id = p.company_id AND c.campaign_key = p.campaign_key
		LEFT JOIN products pr ON pr.company_id = p.company_id AND pr.product_id = p.product_id
		WHERE p.company_id = $1 AND p.campaign_key = ANY($2)
		GROUP BY 1, 2, 3`, companyID, keys)
	if err != nil {
		return nil, fmt.Errorf("readmodels: campaign stats: products: %w", err)
	}
	var key string
	var g productGroup
	_, err = pgx.ForEachRow(rows, []any{&key, &g.title, &g.featured, &g.units, &g.revenue, &g.discount}, func() error {
		out[key] = append(out[key], g)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("readmodels: campaign stats: products: %w", err)
	}
	return out, nil
}

// windowTotals computes the sales figures of a campaign for a window of
// its own (the beta endpoint) from its members and their sales, with the
// rule the projection applies (campaign.FiguresOf).
func (q *Campaigns) windowTotals(ctx context.Context, c campaign.Campaign, t statsTotals, w campaign.Window) (statsTotals, error) {
	figures, err := q.windowFigures(ctx, c.CompanyID, c.Key, w)
	if err != nil {
		return t, err
	}
	t.withSales, t.sales, t.revenue, t.units, t.first, t.last, t.groups = 0, 0, 0, 0, nil, nil, nil
	products := map[string]campaign.ProductFigures{}
	for _, f := range figures {
		if f.Audience() && f.WindowSales {
			t.withSales++
		}
		for _, cv := range f.Conversions {
			t.sales++
			t.revenue += cv.Revenue
			t.units += cv.Units
			if d := cv.Date; t.first == nil || d.Before(*t.first) {
				t.first = &d
			}
			if d := cv.Date; t.last == nil || d.After(*t.last) {
				t.last = &d
			}
			for id, p := range cv.Products {
				sum := products[id]
				sum.ExternalID = p.ExternalID
				sum.Units += p.Units
				sum.Revenue += p.Revenue
				sum.Discount += p.Discount
				products[id] = sum
			}
		}
	}
	if len(products) == 0 {
		return t, nil
	}
	ids := slices.Collect(maps.Keys(products))
	rows, err := q.db.Query(ctx, `SELECT k.product_id, `+firstCategory+`
		FROM unnest($2::text[]) AS k(product_id)
		LEFT JOIN products pr ON pr.company_id = $1 AND pr.product_id = k.product_id`, c.CompanyID, ids)
	if err != nil {
		return t, fmt.Errorf("readmodels: campaign stats: categories: %w", err)
	}
	var id, title string
	_, err = pgx.ForEachRow(rows, []any{&id, &title}, func() error {
		p := products[id]
		t.groups = append(t.groups, productGroup{title: title, featured: slices.Contains(c.ProductIDs, p.ExternalID),
			units: p.Units, revenue: p.Revenue, discount: p.Discount})
		return nil
	})
	if err != nil {
		return t, fmt.Errorf("readmodels: campaign stats: categories: %w", err)
	}
	return t, nil
}

// windowFigures decides, for a window of a campaign's own, the part of
// each of its members that has a counted sale in it, as the projection
// decides it (campaign.FiguresOf).
func (q *Campaigns) windowFigures(ctx context.Context, companyID, key string, w campaign.Window) ([]campaign.Figures, error) {
	rows, err := q.db.Query(ctx, `SELECT m.customer_id, m.counts, m.first_reaction, s.sale_id, s.sale_date, s.revenue, s.stat_rows
		FROM campaign_stats_members m JOIN campaign_stats_sales s ON s.company_id = m.company_id AND s.customer_id = m.customer_id
		WHERE m.company_id = $1 AND m.campaign_key = $2 AND s.counted AND s.sale_date BETWEEN $3 AND $4
		ORDER BY m.customer_id, s.sale_date, s.sale_id`, companyID, key, w.Start, w.End)
	if err != nil {
		return nil, fmt.Errorf("readmodels: campaign stats: window: %w", err)
	}
	members := map[string]campaign.Member{}
	sales := map[string][]campaign.Sale{}
	var customer string
	var counts []int64
	var first, date *time.Time
	var s campaign.Sale
	var statRows []byte
	_, err = pgx.ForEachRow(rows, []any{&customer, &counts, &first, &s.ID, &date, &s.Revenue, &statRows}, func() error {
		var m campaign.Member
		copy(m.Counts[:], counts)
		if first != nil {
			m.FirstReaction = first.UTC()
		}
		members[customer] = m
		sl := campaign.Sale{ID: s.ID, Counted: true, Revenue: s.Revenue}
		if date != nil {
			sl.Date = date.UTC()
		}
		if err := json.Unmarshal(statRows, &sl.Rows); err != nil {
			return err
		}
		sales[customer] = append(sales[customer], sl)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("readmodels: campaign stats: window: %w", err)
	}
	out := make([]campaign.Figures, 0, len(members))
	for customer, m := range members {
		out = append(out, campaign.FiguresOf(m, w, true, sales[customer]))
	}
	return out, nil
}

// parseStatsCursor reads a Next: the sort time and key of the last
// campaign of a page.
func parseStatsCursor(s string) (time.Time, string, error) {
	at, key, ok := strings.Cut(s, " ")
	t, err := time.Parse(time.RFC3339Nano, at)
	if err != nil || !ok || !campaign.ValidKey(key) {
		e := domain.Errorf(domain.Invalid, "query parameter from is not a next of this endpoint")
		e.Details = []domain.FieldError{{Field: "from", Reason: "must be the next of an earlier answer"}}
		return time.Time{}, "", e
	}
	return t, key, nil
}
