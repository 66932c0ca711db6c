package readmodels

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/clientele/clientele/internal/pg/pgtest"
)

// TestCampaignSalesDaysTimeZone checks that a campaign's conversions are
// summed per date of the company's time zone, across a change of summer
// time, and that another campaign's or company's are not counted.
func TestCampaignSalesDaysTimeZone(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	_, err := pool.Exec(ctx, `INSERT INTO campaign_stats_conversions (company_id, campaign_key, customer_id, sale_id, sale_date, revenue, units, products)
		VALUES ('co1', 'k1', 'a', 's1', '2025-03-29T22:30:00Z', 100, 100, '{}'),
			('co1', 'k1', 'a', 's2', '2025-03-29T23:30:00Z', 200, 100, '{}'),
			('co1', 'k1', 'b', 's3', '2025-03-30T22:30:00Z', 400, 100, '{}'),
			('co1', 'k2', 'a', 's1', '2025-03-29T22:30:00Z', 800, 100, '{}'),
			('co2', 'k1', 'c', 's4', '2025-03-29T22:30:00Z', 1600, 100, '{}')`)
	if err != nil {
		t.Fatal(err)
	}
	ams, err := time.LoadLocation("Europe/Amsterdam")
	if err != nil {
		t.Fatal(err)
	}
	q := &Campaigns{db: database{pool}}
	for _, tt := range []struct {
		loc  *time.Location
		want []SalesDay
	}{
		// 23:30 CET on the 29th, 00:30 CET on the 30th, 00:30 CEST on the
		// 31st (summer time began on the 30th).
		{ams, []SalesDay{
			{Day: time.Date(2025, 3, 29, 0, 0, 0, 0, ams), Sales: 1, Revenue: 100},
			{Day: time.Date(2025, 3, 30, 0, 0, 0, 0, ams), Sales: 1, Revenue: 200},
			{Day: time.Date(2025, 3, 31, 0, 0, 0, 0, ams), Sales: 1, Revenue: 400},
		}},
		{time.UTC, []SalesDay{
			{Day: time.Date(2025, 3, 29, 0, 0, 0, 0, time.UTC), Sales: 2, Revenue: 300},
			{Day: time.Date(2025, 3, 30, 0, 0, 0, 0, time.UTC), Sales: 1, Revenue: 400},
		}},
	} {
		got, err := q.CampaignSalesDays(ctx, SalesDaysQuery{CompanyID: "co1", Key: "k1", Location: tt.loc})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tt.loc, diff)
		}
	}
}
