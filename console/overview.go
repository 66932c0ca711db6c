package console

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/clientele/clientele/domain/company"
	"github.com/clientele/clientele/domain/datatarget"
	"github.com/clientele/clientele/readmodels"
)

// overviewDays is how many days the overview's import chart shows,
// today included.
const overviewDays = 14

// maxFailingShown bounds the failing outlets the overview lists (each
// costs a read of its last attempt).
const maxFailingShown = 20

// figureDays is how many days the overview's headline figures cover,
// today included.
const figureDays = 30

// overviewView is the overview page.
type overviewView struct {
	// Figures are the headline figures, each with its trend.
	Figures                  []headline
	Imports                  barChart
	Runs, Accepted, Rejected int64
	Since                    string
	Failing                  []failingRow
	// MoreFailing counts the failing outlets not listed.
	MoreFailing int
}

// headline is a figure of the overview with its trend over the last
// figureDays days.
type headline struct {
	ID, Label, Value, Note string
	Trend                  sparkline
}

// operationsView is the operator's page: the projections' lag.
type operationsView struct {
	// Lag is nil when the server does not say (no ProjectionStatus).
	Lag          []lagRow
	LagAvailable bool
}

type lagRow struct {
	Name      string
	Lag       int64
	UpdatedAt string
	Parked    bool
	CaughtUp  bool
}

// failingRow is an outlet that is not delivering now.
type failingRow struct {
	Datatarget, DatatargetID, OutletID, URL string
	Disabled                                bool
	Reason                                  string
	FailedAttempts                          int
	LastAttempt, NextAttempt                string
	// Attempt is the address of the last attempt's page, "" when none.
	Attempt string
}

// handleOverview is the console's home: the imports of the last days as
// a chart, the projections' lag, and the outlets failing now.
func (c *Console) handleOverview(g *gin.Context) error {
	ctx := g.Request.Context()
	co := companyOf(g)
	loc := co.Location()
	now := time.Now().In(loc)
	since := now.AddDate(0, 0, -(overviewDays - 1))
	days, err := c.app.Queries.Imports.ImportDays(ctx, co.ID, since, loc)
	if err != nil {
		return err
	}
	v := overviewView{Since: since.Format("2006-01-02")}
	byDay := map[string]readmodels.ImportDay{}
	for _, d := range days {
		byDay[d.Day.Format("2006-01-02")] = d
		v.Runs += d.Runs
		v.Accepted += d.Accepted
		v.Rejected += d.Rejected
	}
	var points []chartPoint
	for i := range overviewDays {
		day := since.AddDate(0, 0, i)
		d := byDay[day.Format("2006-01-02")]
		points = append(points, chartPoint{Label: dayLabel(day, i == 0), Title: day.Format("Jan 2"), Values: []float64{float64(d.Accepted), float64(d.Rejected)}})
	}
	v.Imports = newBarChart("imports-chart", "Records imported per day", []chartSeries{
		{Name: "accepted", Class: "chart-ok"}, {Name: "rejected", Class: "chart-bad"},
	}, points, formatCount)

	if v.Figures, err = c.headlines(ctx, co, now); err != nil {
		return err
	}
	if v.Failing, v.MoreFailing, err = c.failingOutlets(ctx, g, co.ID); err != nil {
		return err
	}
	c.render(g, http.StatusOK, "overview", "Overview", "overview", v)
	return nil
}

// headlines reads the overview's headline figures: customers, new ones
// this week, events and revenue of the last figureDays days, each with
// its trend per day.
func (c *Console) headlines(ctx context.Context, co company.Company, now time.Time) ([]headline, error) {
	f, err := c.app.Queries.Customers.Overview(ctx, co.ID, now.AddDate(0, 0, -(figureDays-1)), co.Location())
	if err != nil {
		return nil, err
	}
	var customers, newDaily, events, revenue []float64
	var total, week, nEvents, nRevenue, nSales int64
	total = f.Customers
	// The customers day by day: today's total less the new ones since.
	for i := len(f.Days) - 1; i >= 0; i-- {
		customers = append([]float64{float64(total)}, customers...)
		total -= f.Days[i].NewCustomers
	}
	for i, d := range f.Days {
		newDaily = append(newDaily, float64(d.NewCustomers))
		events = append(events, float64(d.Events))
		revenue = append(revenue, float64(d.Revenue))
		if i >= len(f.Days)-7 {
			week += d.NewCustomers
		}
		nEvents += d.Events
		nRevenue += d.Revenue
		nSales += d.Sales
	}
	eventsValue := formatCount(float64(nEvents))
	if f.EventsAtLeast {
		eventsValue = "at least " + eventsValue
	}
	days := strconv.Itoa(figureDays)
	return []headline{
		{ID: "figure-customers", Label: "Customers", Value: formatCount(float64(f.Customers)), Note: "over " + days + " days",
			Trend: newSparkline("Customers day by day, last "+days+" days", customers)},
		{ID: "figure-new", Label: "New this week", Value: formatCount(float64(week)), Note: "new customers a day, " + days + " days",
			Trend: newSparkline("New customers a day, last "+days+" days", newDaily)},
		{ID: "figure-events", Label: "Events, " + days + " days", Value: eventsValue, Note: "a day, by their date",
			Trend: newSparkline("Events a day, last "+days+" days", events)},
		{ID: "figure-revenue", Label: "Revenue, " + days + " days", Value: formatMoney(nRevenue, currencyOf(co)),
			Note:  salesNote(nSales),
			Trend: newSparkline("Revenue a day, last "+days+" days", revenue)},
	}, nil
}

// salesNote says how many sales the revenue is of.
func salesNote(n int64) string {
	if n == 1 {
		return "1 sale; a day, by their date"
	}
	return formatCount(float64(n)) + " sales; a day, by their date"
}

// dayLabel labels a day of a chart: its day of the month, with the month
// on the first day shown and on the 1st, so that the labels stay short
// enough to be read side by side.
func dayLabel(day time.Time, first bool) string {
	if first || day.Day() == 1 {
		return day.Format("Jan 2")
	}
	return day.Format("2")
}

// handleOperations is the operator's page: how far the asynchronous
// projections are behind the log, and whether they parked this company.
func (c *Console) handleOperations(g *gin.Context) error {
	v := operationsView{}
	if c.app.Queries.ProjectionStatus != nil {
		v.LagAvailable = true
		st, err := c.app.Queries.ProjectionStatus(g.Request.Context(), companyOf(g).ID)
		if err != nil {
			return err
		}
		for _, s := range st {
			r := lagRow{Name: s.Name, Lag: s.Lag, Parked: s.StalledCompanies > 0, CaughtUp: s.Lag == 0, UpdatedAt: "–"}
			if !s.UpdatedAt.IsZero() {
				r.UpdatedAt = s.UpdatedAt.UTC().Format("2006-01-02 15:04:05 UTC")
			}
			v.Lag = append(v.Lag, r)
		}
	}
	c.render(g, http.StatusOK, "operations", "Operations", "operations", v)
	return nil
}

// failingOutlets lists the company's outlets that are not delivering,
// each with its last attempt.
func (c *Console) failingOutlets(ctx context.Context, g *gin.Context, companyID string) ([]failingRow, int, error) {
	if c.app.Queries.Datatargets == nil {
		return nil, 0, nil
	}
	states, err := c.app.Queries.Datatargets.FailingOutlets(ctx, companyID)
	if err != nil || len(states) == 0 {
		return nil, 0, err
	}
	more := max(0, len(states)-maxFailingShown)
	states = states[:min(len(states), maxFailingShown)]
	list, err := c.app.Queries.Datatargets.Datatargets(ctx, companyID)
	if err != nil {
		return nil, 0, err
	}
	outlets := map[string]datatarget.Outlet{}
	names := map[string]string{}
	for _, d := range list {
		names[d.ID] = d.Name
		for _, o := range d.Outlets {
			outlets[o.ID] = o
		}
	}
	p := principalOf(g)
	var out []failingRow
	for _, s := range states {
		o := outlets[s.OutletID]
		u := o.RequestFor(p).URL
		r := failingRow{
			Datatarget: names[s.DatatargetID], DatatargetID: s.DatatargetID, OutletID: s.OutletID, URL: u,
			Disabled: !s.Enabled, Reason: s.DisabledReason, FailedAttempts: s.FailedAttempts,
			LastAttempt: whenZero(s.LastAttemptAt), NextAttempt: whenZero(s.NextAttemptAt),
		}
		page, err := c.app.Queries.Datatargets.Log(ctx, readmodels.LogQuery{CompanyID: companyID, DatatargetID: s.DatatargetID,
			OutletID: s.OutletID, Limit: 1, Descending: true})
		if err != nil {
			return nil, 0, err
		}
		if len(page.Entries) == 1 {
			e := page.Entries[0].For(p)
			if e.Status != datatarget.StatusOK && r.Reason == "" {
				r.Reason, _ = cutText(e.FailReason, shownCellBytes)
			}
			r.Attempt = attemptPath(s.DatatargetID, s.OutletID, e.EntryNumber)
		}
		out = append(out, r)
	}
	return out, more, nil
}

// whenZero writes a time, "–" for none.
func whenZero(t time.Time) string {
	if t.IsZero() {
		return "–"
	}
	return t.UTC().Format("2006-01-02 15:04:05 UTC")
}

func datatargetPath(id string) string { return Prefix + "/datatargets/" + url.PathEscape(id) }

func outletPath(datatargetID, outletID string) string {
	return datatargetPath(datatargetID) + "/outlets/" + url.PathEscape(outletID)
}

func attemptPath(datatargetID, outletID string, n int64) string {
	return outletPath(datatargetID, outletID) + "/log/" + formatInt(n)
}
