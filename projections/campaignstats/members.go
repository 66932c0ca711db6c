package campaignstats

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/clientele/clientele/domain/campaign"
	"github.com/clientele/clientele/projections/internal/bulk"
	"github.com/clientele/clientele/projections/internal/document"
)

// memberState is what is stored of a member: its activity and its part
// of the figures.
type memberState struct {
	campaign.Figures
	stored bool
}

// statsDelta is what a batch adds to a campaign's totals.
type statsDelta struct {
	CompanyID   string    `json:"company_id"`
	CampaignKey string    `json:"campaign_key"`
	Audience    int64     `json:"audience_size"`
	Unreachable int64     `json:"audience_unreachable"`
	WithEvents  int64     `json:"audience_with_events"`
	WithSales   int64     `json:"audience_with_sales"`
	Events      []int64   `json:"events"`
	Sales       int64     `json:"total_sales"`
	Revenue     int64     `json:"total_revenue"`
	Units       int64     `json:"total_units"`
	At          time.Time `json:"modified_at"`
	changed     bool
}

// productDelta is what a batch adds to a campaign's figures of a product.
type productDelta struct {
	CompanyID   string `json:"company_id"`
	CampaignKey string `json:"campaign_key"`
	ProductID   string `json:"product_id"`
	campaign.ProductFigures
}

// memberRow is a campaign_stats_members row.
type memberRow struct {
	CompanyID     string     `json:"company_id"`
	CampaignKey   string     `json:"campaign_key"`
	CustomerID    string     `json:"customer_id"`
	Counts        []int64    `json:"counts"`
	FirstReaction *time.Time `json:"first_reaction"`
	WindowSales   bool       `json:"window_sales"`
}

// conversionRow is a campaign_stats_conversions row.
type conversionRow struct {
	CompanyID   string                             `json:"company_id"`
	CampaignKey string                             `json:"campaign_key"`
	CustomerID  string                             `json:"customer_id"`
	SaleID      string                             `json:"sale_id"`
	SaleDate    time.Time                          `json:"sale_date"`
	Revenue     int64                              `json:"revenue"`
	Units       int64                              `json:"units"`
	Products    map[string]campaign.ProductFigures `json:"products"`
}

// decideMembers decides the touched members again from the tables as the
// batch left them (their activity events, their customers' sales, their
// campaigns' windows), and writes what changed: the members, their
// conversions, and the difference to the totals of their campaigns.
//
// The campaigns whose figures changed are added to changed.
func decideMembers(ctx context.Context, tx pgx.Tx, touched map[memberKey]time.Time, changed map[campaignRef]bool) error {
	// In chunks, so that what one statement carries, and what is held
	// of the members and their sales, stays bounded whatever the batch
	// touched: members are decided independently, and each chunk adds
	// its own difference to the totals.
	chunk := make(map[memberKey]time.Time, min(len(touched), decideChunk))
	for k, at := range touched {
		chunk[k] = at
		if len(chunk) == decideChunk {
			if err := decideChunkOf(ctx, tx, chunk, changed); err != nil {
				return err
			}
			clear(chunk)
		}
	}
	return decideChunkOf(ctx, tx, chunk, changed)
}

// decideChunk is how many members decideMembers decides at a time.
var decideChunk = 2000

// decideChunkOf is decideMembers for at most decideChunk members.
func decideChunkOf(ctx context.Context, tx pgx.Tx, touched map[memberKey]time.Time, changed map[campaignRef]bool) error {
	if len(touched) == 0 {
		return nil
	}
	n := len(touched)
	companies, campaigns, customers := make([]string, 0, n), make([]string, 0, n), make([]string, 0, n)
	for k := range touched {
		companies, campaigns, customers = append(companies, k.company), append(campaigns, k.campaign), append(customers, k.customer)
	}
	l := memberLoad{old: map[memberKey]memberState{}, activityOf: map[memberKey]campaign.Member{},
		windows: map[campaignRef]campaign.Window{}, salesOf: map[document.CustomerKey][]campaign.Sale{}}
	if err := l.load(ctx, tx, companies, campaigns, customers); err != nil {
		return err
	}
	old, activityOf, windows, salesOf := l.old, l.activityOf, l.windows, l.salesOf

	deltas := map[campaignRef]*statsDelta{}
	products := map[memberKey]*productDelta{} // keyed by company, campaign, product
	var members []memberRow
	var conversions []conversionRow
	// Members are written only when they changed: those with activity
	// upserted (an update in place, indexes untouched), those left with
	// none (every event deleted) removed, and the conversions of the
	// members whose conversions changed replaced; columns are companies,
	// campaigns, customers.
	var gone, reconverted [3][]string
	for k, at := range touched {
		ref := campaignRef{k.company, k.campaign}
		w, ok := windows[ref]
		m := activityOf[k]
		nf := campaign.FiguresOf(m, w, ok, salesOf[document.CustomerKey{Company: k.company, ID: k.customer}])
		of := old[k].Figures
		d := deltas[ref]
		if d == nil {
			d = &statsDelta{CompanyID: k.company, CampaignKey: k.campaign, Events: make([]int64, campaign.NumFigures)}
			deltas[ref] = d
		}
		d.Audience += b2i(nf.Audience()) - b2i(of.Audience())
		d.Unreachable += b2i(nf.Unreachable()) - b2i(of.Unreachable())
		d.WithEvents += b2i(nf.Reacted()) - b2i(of.Reacted())
		d.WithSales += b2i(nf.Audience() && nf.WindowSales) - b2i(of.Audience() && of.WindowSales)
		for i := range d.Events {
			d.Events[i] += nf.Counts[i] - of.Counts[i]
		}
		d.Sales += int64(len(nf.Conversions) - len(of.Conversions))
		sameConversions := len(nf.Conversions) == len(of.Conversions)
		for sign, cs := range map[int64][]campaign.Conversion{1: nf.Conversions, -1: of.Conversions} {
			for _, c := range cs {
				d.Revenue += sign * c.Revenue
				d.Units += sign * c.Units
				for id, p := range c.Products {
					pk := memberKey{k.company, k.campaign, id}
					pd := products[pk]
					if pd == nil {
						pd = &productDelta{CompanyID: k.company, CampaignKey: k.campaign, ProductID: id}
						products[pk] = pd
					}
					pd.ExternalID = p.ExternalID
					pd.Units += sign * p.Units
					pd.Revenue += sign * p.Revenue
					pd.Discount += sign * p.Discount
				}
			}
		}
		if sameConversions {
			for i := range nf.Conversions {
				a, b := nf.Conversions[i], of.Conversions[i]
				if a.SaleID != b.SaleID || !a.Date.Equal(b.Date) || a.Revenue != b.Revenue || a.Units != b.Units ||
					!sameProducts(a.Products, b.Products) {
					sameConversions = false
				}
			}
		}
		memberChanged := nf.Member.Counts != of.Member.Counts || !nf.FirstReaction.Equal(of.FirstReaction) ||
			nf.WindowSales != of.WindowSales
		if !memberChanged && sameConversions {
			// Stored as it is (most sales of an audience member change
			// none of its campaigns): nothing to write.
			continue
		}
		// The campaign's figures move only with what they count: a
		// customer outside the audience (opened, never sent) whose
		// sales in the window or first reaction change has its row
		// rewritten, but its campaign neither gets a new
		// cache_modified_at nor a datasync message.
		if !sameConversions || nf.Counts != of.Counts || nf.Audience() != of.Audience() ||
			nf.Unreachable() != of.Unreachable() || nf.Reacted() != of.Reacted() ||
			(nf.Audience() && nf.WindowSales) != (of.Audience() && of.WindowSales) {
			d.changed = true
			if at.After(d.At) {
				d.At = at
			}
		}
		if nf.Member.Counts != ([campaign.NumFigures]int64{}) {
			if memberChanged {
				row := memberRow{CompanyID: k.company, CampaignKey: k.campaign, CustomerID: k.customer,
					Counts: nf.Counts[:], WindowSales: nf.WindowSales}
				if !nf.FirstReaction.IsZero() {
					t := nf.FirstReaction
					row.FirstReaction = &t
				}
				members = append(members, row)
			}
		} else if old[k].stored {
			gone[0], gone[1], gone[2] = append(gone[0], k.company), append(gone[1], k.campaign), append(gone[2], k.customer)
		}
		if sameConversions {
			continue
		}
		// The member's conversions are written whole.
		reconverted[0], reconverted[1], reconverted[2] = append(reconverted[0], k.company), append(reconverted[1], k.campaign),
			append(reconverted[2], k.customer)
		for _, c := range nf.Conversions {
			conversions = append(conversions, conversionRow{CompanyID: k.company, CampaignKey: k.campaign, CustomerID: k.customer,
				SaleID: c.SaleID, SaleDate: c.Date, Revenue: c.Revenue, Units: c.Units, Products: c.Products})
		}
	}

	var out []*statsDelta
	for ref, d := range deltas {
		if d.changed {
			out = append(out, d)
			changed[ref] = true
		}
	}
	var prods []*productDelta
	for _, p := range products {
		if p.Units != 0 || p.Revenue != 0 || p.Discount != 0 {
			prods = append(prods, p)
		}
	}
	if len(out) == 0 && len(members) == 0 && len(gone[0]) == 0 && len(reconverted[0]) == 0 {
		return nil
	}
	var b pgx.Batch
	if len(gone[0]) > 0 {
		b.Queue(`DELETE FROM campaign_stats_members m USING unnest($1::text[], $2::text[], $3::text[]) AS k(company_id, campaign_key, customer_id)
			WHERE m.company_id = k.company_id AND m.campaign_key = k.campaign_key AND m.customer_id = k.customer_id`,
			gone[0], gone[1], gone[2])
	}
	if len(reconverted[0]) > 0 {
		b.Queue(`DELETE FROM campaign_stats_conversions c USING unnest($1::text[], $2::text[], $3::text[]) AS k(company_id, campaign_key, customer_id)
			WHERE c.company_id = k.company_id AND c.campaign_key = k.campaign_key AND c.customer_id = k.customer_id`,
			reconverted[0], reconverted[1], reconverted[2])
	}
	if err := bulk.QueueRows(&b, "campaign_stats", `
		INSERT INTO campaign_stats_members AS m (company_id, campaign_key, customer_id, counts, first_reaction, window_sales)
		SELECT company_id, campaign_key, customer_id, counts, first_reaction, window_sales
		FROM jsonb_to_recordset($1::jsonb) AS r(company_id text, campaign_key text, customer_id text, counts bigint[],
			first_reaction timestamptz, window_sales boolean)
		ON CONFLICT (company_id, campaign_key, customer_id) DO UPDATE SET counts = EXCLUDED.counts,
			first_reaction = EXCLUDED.first_reaction, window_sales = EXCLUDED.window_sales`, members); err != nil {
		return err
	}
	if err := bulk.QueueRows(&b, "campaign_stats", `
		INSERT INTO campaign_stats_conversions (company_id, campaign_key, customer_id, sale_id, sale_date, revenue, units, products)
		SELECT company_id, campaign_key, customer_id, sale_id, sale_date, revenue, units, products
		FROM jsonb_to_recordset($1::jsonb) AS r(company_id text, campaign_key text, customer_id text, sale_id text,
			sale_date timestamptz, revenue bigint, units bigint, products jsonb)`, conversions); err != nil {
		return err
	}
	if err := bulk.QueueRows(&b, "campaign_stats", `
		INSERT INTO campaign_stats AS s (company_id, campaign_key, audience_size, audience_unreachable, audience_with_events,
			audience_with_sales, events, total_sales, total_revenue, total_units, modified_at)
		SELECT company_id, campaign_key, audience_size, audience_unreachable, audience_with_events, audience_with_sales,
			events, total_sales, total_revenue, total_units, modified_at
		FROM jsonb_to_recordset($1::jsonb) AS r(company_id text, campaign_key text, audience_size bigint,
			audience_unreachable bigint, audience_with_events bigint, audience_with_sales bigint, events bigint[],
			total_sales bigint, total_revenue bigint, total_units bigint, modified_at timestamptz)
		ON CONFLICT (company_id, campaign_key) DO UPDATE SET
			audience_size = s.audience_size + EXCLUDED.audience_size,
			audience_unreachable = s.audience_unreachable + EXCLUDED.audience_unreachable,
			audience_with_events = s.audience_with_events + EXCLUDED.audience_with_events,
			audience_with_sales = s.audience_with_sales + EXCLUDED.audience_with_sales,
			events = ARRAY(SELECT a + b FROM unnest(s.events, EXCLUDED.events) AS t(a, b)),
			total_sales = s.total_sales + EXCLUDED.total_sales,
			total_revenue = s.total_revenue + EXCLUDED.total_revenue,
			total_units = s.total_units + EXCLUDED.total_units,
			modified_at = greatest(s.modified_at, EXCLUDED.modified_at)`, out); err != nil {
		return err
	}
	if err := bulk.QueueRows(&b, "campaign_stats", `
		INSERT INTO campaign_stats_products AS p (company_id, campaign_key, product_id, external_id, units, revenue, discount)
		SELECT company_id, campaign_key, product_id, external_id, units, revenue, discount
		FROM jsonb_to_recordset($1::jsonb) AS r(company_id text, campaign_key text, product_id text, external_id text,
			units bigint, revenue bigint, discount bigint)
		ON CONFLICT (company_id, campaign_key, product_id) DO UPDATE SET external_id = EXCLUDED.external_id,
			units = p.units + EXCLUDED.units, revenue = p.revenue + EXCLUDED.revenue, discount = p.discount + EXCLUDED.discount`,
		prods); err != nil {
		return err
	}
	if len(prods) > 0 {
		// A product whose conversions all went leaves no row.
		var companies, keys []string
		for _, p := range prods {
			companies, keys = append(companies, p.CompanyID), append(keys, p.CampaignKey)
		}
		b.Queue(`DELETE FROM campaign_stats_products WHERE units = 0 AND revenue = 0 AND discount = 0
			AND (company_id, campaign_key) IN (SELECT * FROM unnest($1::text[], $2::text[]))`, companies, keys)
	}
	return bulk.SendBatch(ctx, tx, "campaign_stats", &b)
}

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

func sameProducts(a, b map[string]campaign.ProductFigures) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// memberLoad is what decideMembers reads of the touched members: their
// stored state, their activity, their campaigns' windows and their
// customers' counted sales.
type memberLoad struct {
	old        map[memberKey]memberState
	activityOf map[memberKey]campaign.Member
	windows    map[campaignRef]campaign.Window
	salesOf    map[document.CustomerKey][]campaign.Sale
}

// load reads it all in one round trip: this runs for every commit with
// campaign activity, and for every commit of sales of a campaign's
// audience.
func (l *memberLoad) load(ctx context.Context, tx pgx.Tx, companies, campaigns, customers []string) error {
	var b pgx.Batch
	wrap := func(what string, scan func(pgx.Rows) error) func(pgx.Rows) error {
		return func(rows pgx.Rows) error {
			if err := scan(rows); err != nil {
				return fmt.Errorf("projections: campaign_stats: load %s: %w", what, err)
			}
			return nil
		}
	}
	b.Queue(`SELECT m.company_id, m.campaign_key, m.customer_id, m.counts, m.first_reaction, m.window_sales
		FROM campaign_stats_members m
		JOIN unnest($1::text[], $2::text[], $3::text[]) AS k(company_id, campaign_key, customer_id) USING (company_id, campaign_key, customer_id)`,
		companies, campaigns, customers).Query(wrap("members", l.scanMembers))
	b.Queue(`SELECT c.company_id, c.campaign_key, c.customer_id, c.sale_id, c.sale_date, c.revenue, c.units, c.products
		FROM campaign_stats_conversions c
		JOIN unnest($1::text[], $2::text[], $3::text[]) AS k(company_id, campaign_key, customer_id) USING (company_id, campaign_key, customer_id)
		ORDER BY c.sale_date, c.sale_id`,
		companies, campaigns, customers).Query(wrap("conversions", l.scanConversions))
	b.Queue(`SELECT e.company_id, e.campaign_key, e.customer_id, e.figure, count(*), min(e.date)
		FROM campaign_stats_events e
		JOIN unnest($1::text[], $2::text[], $3::text[]) AS k(company_id, campaign_key, customer_id) USING (company_id, campaign_key, customer_id)
		GROUP BY 1, 2, 3, 4`, companies, campaigns, customers).Query(wrap("activity", l.scanActivity))
	// The campaigns once each: a commit's thousand members are of a few.
	var wcos, wkeys []string
	seen := map[campaignRef]bool{}
	for i := range companies {
		if ref := (campaignRef{companies[i], campaigns[i]}); !seen[ref] {
			seen[ref] = true
			wcos, wkeys = append(wcos, ref.company), append(wkeys, ref.key)
		}
	}
	b.Queue(`SELECT s.company_id, s.campaign_key, s.activated_at FROM campaign_stats s
		JOIN unnest($1::text[], $2::text[]) AS k(company_id, campaign_key) USING (company_id, campaign_key)
		WHERE s.activated_at IS NOT NULL`, wcos, wkeys).Query(wrap("windows", l.scanWindows))
	b.Queue(`SELECT s.company_id, s.customer_id, s.sale_id, s.sale_date, s.revenue, s.stat_rows
		FROM campaign_stats_sales s
		JOIN (SELECT DISTINCT * FROM unnest($1::text[], $2::text[])) AS k(company_id, customer_id) USING (company_id, customer_id)
		WHERE s.counted AND s.sale_date IS NOT NULL -- the only ones campaign.FiguresOf reads
		ORDER BY s.sale_date, s.sale_id`, companies, customers).Query(wrap("sales of customers", l.scanSales))
	return tx.SendBatch(ctx, &b).Close()
}

func (l *memberLoad) scanMembers(rows pgx.Rows) error {
	var k memberKey
	var counts []int64
	var first *time.Time
	var windowSales bool
	_, err := pgx.ForEachRow(rows, []any{&k.company, &k.campaign, &k.customer, &counts, &first, &windowSales}, func() error {
		s := l.old[k]
		s.stored, s.WindowSales = true, windowSales
		copy(s.Counts[:], counts)
		if first != nil {
			s.FirstReaction = first.UTC()
		}
		l.old[k] = s
		return nil
	})
	return err
}

func (l *memberLoad) scanConversions(rows pgx.Rows) error {
	var k memberKey
	var c campaign.Conversion
	var products []byte
	_, err := pgx.ForEachRow(rows, []any{&k.company, &k.campaign, &k.customer, &c.SaleID, &c.Date, &c.Revenue, &c.Units, &products}, func() error {
		conv := c
		conv.Date = conv.Date.UTC()
		conv.Products = nil
		if err := json.Unmarshal(products, &conv.Products); err != nil {
			return err
		}
		s := l.old[k]
		s.Conversions = append(s.Conversions, conv)
		l.old[k] = s
		return nil
	})
	return err
}

func (l *memberLoad) scanActivity(rows pgx.Rows) error {
	var k memberKey
	var f int16
	var n int64
	var first time.Time
	_, err := pgx.ForEachRow(rows, []any{&k.company, &k.campaign, &k.customer, &f, &n, &first}, func() error {
		if f < 0 || campaign.Figure(f) >= campaign.NumFigures {
			return fmt.Errorf("figure %d", f)
		}
		m := l.activityOf[k]
		m.Counts[f] = n
		if campaign.Figure(f) == campaign.Opens || campaign.Figure(f) == campaign.Clicks {
			if m.FirstReaction.IsZero() || first.Before(m.FirstReaction) {
				m.FirstReaction = first.UTC()
			}
		}
		l.activityOf[k] = m
		return nil
	})
	return err
}

func (l *memberLoad) scanWindows(rows pgx.Rows) error {
	var ref campaignRef
	var at time.Time
	_, err := pgx.ForEachRow(rows, []any{&ref.company, &ref.key, &at}, func() error {
		l.windows[ref], _ = campaign.WindowOf(at.UTC())
		return nil
	})
	return err
}

func (l *memberLoad) scanSales(rows pgx.Rows) error {
	var k document.CustomerKey
	var s campaign.Sale
	var date time.Time
	var statRows []byte
	_, err := pgx.ForEachRow(rows, []any{&k.Company, &k.ID, &s.ID, &date, &s.Revenue, &statRows}, func() error {
		sl := campaign.Sale{ID: s.ID, Counted: true, Date: date.UTC(), Revenue: s.Revenue}
		if err := json.Unmarshal(statRows, &sl.Rows); err != nil {
			return err
		}
		l.salesOf[k] = append(l.salesOf[k], sl)
		return nil
	})
	return err
}
