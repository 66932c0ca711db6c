package readmodels

import (
	"context"
	"fmt"
	"time"
)

// OverviewMaxEvents bounds the events the overview's figures read: the
// newest of the company. Events have no index by date, so the events of
// the last days are found among these; past the bound, the count says
// "at least".
const OverviewMaxEvents = 200_000

// OverviewDay is one day of the overview's figures.
type OverviewDay struct {
	// Day is the day's midnight in the company's time zone.
	Day time.Time
	// NewCustomers were created on the day; Events and Sales are dated
	// on it, Revenue is the sales' revenue (minor units of the company's
	// currency, counted sales only, as the campaign statistics count).
	NewCustomers, Events, Sales, Revenue int64
}

// OverviewFigures are the overview's headline figures.
type OverviewFigures struct {
	// Customers is how many customers retrieval shows.
	Customers int64
	// Days are the days from since to today, oldest first, every day.
	Days []OverviewDay
	// EventsAtLeast is true when the events were read up to
	// OverviewMaxEvents: the days' events are then lower bounds.
	EventsAtLeast bool
}

// Overview returns the company's headline figures (the console's
// overview) per day of loc from the day of since on. Each is read along
// an index: new customers and sales by their ids, UUIDv7 led by the
// millisecond of their creation (a range of the primary key from since,
// as ImportDays reads runs; a sale recorded before since but dated after
// it is left out); events among the company's newest OverviewMaxEvents,
// by their date. Deleted customers, events and sales are left out.
func (q *Customers) Overview(ctx context.Context, companyID string, since time.Time, loc *time.Location) (OverviewFigures, error) {
	if loc == nil {
		loc = time.UTC
	}
	y, m, d := since.In(loc).Date()
	start := time.Date(y, m, d, 0, 0, 0, 0, loc)
	lower := fmt.Sprintf("%012x", start.UnixMilli()-1)
	var out OverviewFigures
	if err := q.db.QueryRow(ctx, `SELECT count(*) FROM customers WHERE company_id = $1 AND NOT is_deleted`, companyID).Scan(&out.Customers); err != nil {
		return out, fmt.Errorf("readmodels: overview: %w", err)
	}
	var events int64
	if err := q.db.QueryRow(ctx, `SELECT count(*) FROM (SELECT 1 FROM activity_events WHERE company_id = $1 ORDER BY event_id DESC LIMIT $2) e`,
		companyID, OverviewMaxEvents).Scan(&events); err != nil {
		return out, fmt.Errorf("readmodels: overview: %w", err)
	}
	out.EventsAtLeast = events >= OverviewMaxEvents
	rows, err := q.db.Query(ctx, `
		SELECT day, sum(customers)::bigint, sum(events)::bigint, sum(sales)::bigint, sum(revenue)::bigint FROM (
			SELECT date_trunc('day', created_at AT TIME ZONE $3) AS day, count(*) AS customers, 0 AS events, 0 AS sales, 0 AS revenue
				FROM customers WHERE company_id = $1 AND customer_id >= $2 AND created_at >= $4 AND NOT is_deleted GROUP BY 1
			UNION ALL
			SELECT date_trunc('day', at AT TIME ZONE $3), 0, count(*), 0, 0 FROM (
				SELECT CASE WHEN doc ->> 'date' ~ '^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d' THEN (doc ->> 'date')::timestamptz END AS at
				FROM (SELECT doc, is_deleted FROM activity_events WHERE company_id = $1 ORDER BY event_id DESC LIMIT $5) newest
				WHERE NOT is_deleted) e
				WHERE at >= $4 GROUP BY 1
			UNION ALL
			SELECT date_trunc('day', sale_date AT TIME ZONE $3), 0, 0, count(*) FILTER (WHERE counted), coalesce(sum(revenue), 0)
				FROM sales WHERE company_id = $1 AND sale_id >= $2 AND sale_date >= $4 AND NOT is_deleted GROUP BY 1
		) f GROUP BY day ORDER BY day`, companyID, lower, loc.String(), start, OverviewMaxEvents)
	if err != nil {
		return out, fmt.Errorf("readmodels: overview: %w", err)
	}
	defer rows.Close()
	byDay := map[string]OverviewDay{}
	for rows.Next() {
		var od OverviewDay
		var day time.Time
		if err := rows.Scan(&day, &od.NewCustomers, &od.Events, &od.Sales, &od.Revenue); err != nil {
			return out, fmt.Errorf("readmodels: overview: %w", err)
		}
		byDay[day.Format(time.DateOnly)] = od
	}
	if err := rows.Err(); err != nil {
		return out, fmt.Errorf("readmodels: overview: %w", err)
	}
	today := time.Now().In(loc)
	for day := start; !day.After(today); day = day.AddDate(0, 0, 1) {
		od := byDay[day.Format(time.DateOnly)]
		od.Day = day
		out.Days = append(out.Days, od)
	}
	return out, nil
}
