package readmodels_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/clientele/clientele/internal/pg/pgtest"
	"github.com/clientele/clientele/readmodels"
)

// TestOverviewFigures: the customers, new customers, events and sales of
// the days since a day, in the company's time zone, deleted ones and
// other companies' left out, every day listed.
func TestOverviewFigures(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	loc, err := time.LoadLocation("Europe/Helsinki")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	uuid7 := func(at time.Time, n int) string { return fmt.Sprintf("%012x%020x", at.UnixMilli(), n) }
	old := now.AddDate(0, 0, -40)
	for i, c := range []struct {
		company string
		at      time.Time
		deleted bool
	}{{"co1", old, false}, {"co1", now, false}, {"co1", now, false}, {"co1", now, true}, {"co2", now, false}} {
		if _, err := pool.Exec(ctx, `INSERT INTO customers (company_id, customer_id, doc, is_deleted, version, created_at, updated_at)
			VALUES ($1, $2, '{}', $3, 1, $4, $4)`, c.company, uuid7(c.at, i), c.deleted, c.at); err != nil {
			t.Fatal(err)
		}
	}
	for i, date := range []string{now.UTC().Format(time.RFC3339), now.UTC().Format(time.RFC3339), old.UTC().Format(time.RFC3339), "not a date"} {
		if _, err := pool.Exec(ctx, `INSERT INTO activity_events (company_id, event_id, customer_id, doc, version, created_at, updated_at)
			VALUES ('co1', $1, 'c', jsonb_build_object('date', $2::text), 1, now(), now())`, i+1, date); err != nil {
			t.Fatal(err)
		}
	}
	for i, s := range []struct {
		date    time.Time
		revenue int64
		counted bool
	}{{now, 16700, true}, {now, 0, false}, {old, 5000, true}} {
		if _, err := pool.Exec(ctx, `INSERT INTO sales (company_id, sale_id, customer_id, doc, state, counted, revenue, sale_date, version, created_at, updated_at)
			VALUES ('co1', $1, 'c', '{}', 'x', $2, $3, $4, 1, now(), now())`, uuid7(now, i), s.counted, s.revenue, s.date); err != nil {
			t.Fatal(err)
		}
	}
	f, err := readmodels.NewCustomers(pool).Overview(ctx, "co1", now.AddDate(0, 0, -29), loc)
	if err != nil {
		t.Fatal(err)
	}
	if f.Customers != 3 || len(f.Days) != 30 || f.EventsAtLeast {
		t.Fatalf("%d customers, %d days, at least %v: want 3, 30, false", f.Customers, len(f.Days), f.EventsAtLeast)
	}
	var sum readmodels.OverviewDay
	for _, d := range f.Days {
		sum.NewCustomers += d.NewCustomers
		sum.Events += d.Events
		sum.Sales += d.Sales
		sum.Revenue += d.Revenue
	}
	today := f.Days[len(f.Days)-1]
	if y, m, d := now.In(loc).Date(); !today.Day.Equal(time.Date(y, m, d, 0, 0, 0, 0, loc)) {
		t.Errorf("the last day is %s, want today in Helsinki", today.Day)
	}
	if sum != (readmodels.OverviewDay{NewCustomers: 2, Events: 2, Sales: 1, Revenue: 16700}) || today.NewCustomers != 2 || today.Revenue != 16700 {
		t.Errorf("the days sum to %+v, today %+v: want 2 new customers, 2 events, 1 sale of 16700, all today", sum, today)
	}
}
