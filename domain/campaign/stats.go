package campaign

import (
	"math"
	"time"
)

// The statistics of a campaign (decisions.md, Campaigns; docs/campaigns.md,
// Statistics). The rules are here once: which activity counts as what,
// the window, who is in the audience, unreachable or reacted, and which
// sales are conversions. The projection and the read side apply them to
// what they store.

// Figure is one of the counts of a campaign's events list.
type Figure int

// The figures, in the order of the events list.
const (
	Sent Figure = iota
	Delivered
	Opens
	Clicks
	Unsubscribes
	SpamReports
	Bounces
	// NumFigures is the number of figures.
	NumFigures
)

// FigureNames are the names of the events list, in order.
var FigureNames = [NumFigures]string{"sent", "delivered", "opens", "clicks", "unsubscribes", "spam_reports", "bounces"}

// activityFigures maps the activity types that report a campaign's
// activity (with a campaign_key) to their figure.
var activityFigures = map[string]Figure{
	"MAIL_SENT": Sent, "SMS_SENT": Sent,
	"MAIL_DELIVERED": Delivered, "SMS_DELIVERED": Delivered,
	"MAIL_OPEN":  Opens,
	"MAIL_CLICK": Clicks, "SMS_CLICK": Clicks,
	"MAIL_UNSUBSCRIBE": Unsubscribes, "SMS_UNSUBSCRIBE": Unsubscribes,
	"MAIL_SPAM_REPORT": SpamReports,
	"MAIL_BOUNCE":      Bounces, "SMS_BOUNCE": Bounces,
}

// ActivityFigure tells which figure an event of type t with a
// campaign_key counts in; ok is false for the types that report no
// campaign activity (BROWSE, a company's own types, ...).
func ActivityFigure(t string) (f Figure, ok bool) {
	f, ok = activityFigures[t]
	return f, ok
}

// ActivityTypes lists the types ActivityFigure knows.
func ActivityTypes() []string {
	out := make([]string, 0, len(activityFigures))
	for t := range activityFigures {
		out = append(out, t)
	}
	return out
}

// WindowLength is how long after its activation a campaign's sales count.
const WindowLength = 30 * 24 * time.Hour

// Window is the span of the sales a campaign's figures count: both ends
// included ("activated_at up to 30 days after it").
type Window struct {
	Start, End time.Time
}

// WindowOf is the window of a campaign activated at activatedAt; ok is
// false for a campaign never activated (zero), which has none.
func WindowOf(activatedAt time.Time) (w Window, ok bool) {
	if activatedAt.IsZero() {
		return Window{}, false
	}
	return Window{Start: activatedAt, End: activatedAt.Add(WindowLength)}, true
}

// Contains reports whether t is inside the window.
func (w Window) Contains(t time.Time) bool {
	return !t.IsZero() && !t.Before(w.Start) && !t.After(w.End)
}

// Member is one customer's activity of one campaign: how many events of
// each figure, and the date of the first reaction (an open or a click;
// zero when none).
type Member struct {
	Counts        [NumFigures]int64
	FirstReaction time.Time
}

// Audience reports whether the customer is in the campaign's audience:
// the campaign was sent to them.
func (m Member) Audience() bool { return m.Counts[Sent] > 0 }

// Reacted reports whether the customer of the audience opened or clicked.
func (m Member) Reacted() bool { return m.Audience() && m.Counts[Opens]+m.Counts[Clicks] > 0 }

// Unreachable reports whether the campaign bounced for the customer of
// the audience, who had no delivery, open or click.
func (m Member) Unreachable() bool {
	return m.Audience() && m.Counts[Bounces] > 0 && m.Counts[Delivered] == 0 && m.Counts[Opens]+m.Counts[Clicks] == 0
}

// Converts reports whether the customer's counted sale dated at saleDate
// inside the window is a conversion: the customer is in the audience and
// reacted before it (strictly: a click at the sale's instant came with
// it, not before it).
func (m Member) Converts(saleDate time.Time) bool {
	return m.Audience() && !m.FirstReaction.IsZero() && m.FirstReaction.Before(saleDate)
}

// Sale is what the statistics need of a sale. Units are hundredths (a
// quantity has two decimals).
type Sale struct {
	ID      string
	Counted bool
	Date    time.Time
	// Revenue is the sale's total in minor units of the default currency.
	Revenue int64
	Rows    []SaleRow
}

// SaleRow is a row of a sale: its product (internal id and external_id),
// units in hundredths, total and discount in minor units, and whether
// it was returned (tag CANCELLED) or deleted.
type SaleRow struct {
	ProductID  string `json:"product_id"`
	ExternalID string `json:"external_id"`
	Units      int64  `json:"units"`
	Revenue    int64  `json:"revenue"`
	Discount   int64  `json:"discount"`
	Returned   bool   `json:"returned,omitempty"`
	Deleted    bool   `json:"deleted,omitempty"`
}

// ProductFigures are a conversion's (or many's) units, revenue and
// discount of one product.
type ProductFigures struct {
	ExternalID string `json:"external_id"`
	Units      int64  `json:"units"`
	Revenue    int64  `json:"revenue"`
	Discount   int64  `json:"discount"`
}

// Conversion is a sale's contribution to a campaign's sales figures.
type Conversion struct {
	SaleID  string
	Date    time.Time
	Revenue int64
	// Units are those of the rows neither returned nor deleted.
	Units int64
	// Products are those rows' figures by the product's internal id.
	Products map[string]ProductFigures
}

// Figures are one customer's part of a campaign's figures.
type Figures struct {
	Member
	// WindowSales reports a counted sale of the customer's in the window.
	WindowSales bool
	Conversions []Conversion
}

// FiguresOf decides one customer's part of a campaign's figures from
// their activity of it and their sales, with the window of the sales
// (ok false: none, the campaign was never activated).
func FiguresOf(m Member, w Window, ok bool, sales []Sale) Figures {
	f := Figures{Member: m}
	if !ok {
		return f
	}
	for _, s := range sales {
		if !s.Counted || !w.Contains(s.Date) {
			continue
		}
		f.WindowSales = true
		if !m.Converts(s.Date) {
			continue
		}
		c := Conversion{SaleID: s.ID, Date: s.Date, Revenue: s.Revenue, Products: map[string]ProductFigures{}}
		for _, r := range s.Rows {
			if r.Returned || r.Deleted {
				continue
			}
			c.Units += r.Units
			p := c.Products[r.ProductID]
			p.ExternalID = r.ExternalID
			p.Units += r.Units
			p.Revenue += r.Revenue
			p.Discount += r.Discount
			c.Products[r.ProductID] = p
		}
		f.Conversions = append(f.Conversions, c)
	}
	return f
}

// AverageUnits is total_units / sales (hundredths of units in, units
// out) to two decimals, half away from zero; 0 when there is no sale.
func AverageUnits(units, sales int64) float64 {
	if sales == 0 {
		return 0
	}
	return math.Round(float64(units)/float64(sales)) / 100
}

// HasStats reports whether the campaign has statistics: not for EXT
// campaigns (run outside the service), nor for one never activated (a
// draft, or one archived from draft), which has no window.
func (c Campaign) HasStats() bool { return c.Kind != External && !c.ActivatedAt.IsZero() }
