package campaign_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/clientele/clientele/domain/campaign"
)

// TestFiguresOf: the window includes both ends, a conversion needs a
// reaction strictly before the sale, and returned and deleted rows leave
// the units and the products.
func TestFiguresOf(t *testing.T) {
	at := time.Date(2024, 6, 1, 0, 0, 0, 0, time.UTC)
	w, ok := campaign.WindowOf(at)
	if !ok || !w.End.Equal(time.Date(2024, 7, 1, 0, 0, 0, 0, time.UTC)) {
		t.Fatalf("window %v", w)
	}
	if _, ok := campaign.WindowOf(time.Time{}); ok {
		t.Error("a campaign never activated has a window")
	}
	reacted := campaign.Member{FirstReaction: at.Add(time.Hour)}
	reacted.Counts[campaign.Sent], reacted.Counts[campaign.Opens] = 1, 1
	sale := func(id string, d time.Time, counted bool) campaign.Sale {
		return campaign.Sale{ID: id, Counted: counted, Date: d, Revenue: 100, Rows: []campaign.SaleRow{
			{ProductID: "p1", ExternalID: "P-1", Units: 150, Revenue: 100, Discount: 5},
			{ProductID: "p1", ExternalID: "P-1", Units: 100, Returned: true},
			{ProductID: "p2", ExternalID: "P-2", Units: 100, Revenue: 40, Deleted: true},
		}}
	}
	tests := []struct {
		name        string
		m           campaign.Member
		sale        campaign.Sale
		windowSales bool
		converts    bool
	}{
		{"at the start", reacted, sale("a", at.Add(2*time.Hour), true), true, true},
		{"at the end", reacted, sale("b", w.End, true), true, true},
		{"a second after the end", reacted, sale("c", w.End.Add(time.Second), true), false, false},
		{"before the window", reacted, sale("d", at.Add(-time.Second), true), false, false},
		{"not counted", reacted, sale("e", at.Add(2*time.Hour), false), false, false},
		{"at the reaction's instant", reacted, sale("f", at.Add(time.Hour), true), true, false},
		{"no reaction", campaign.Member{Counts: [campaign.NumFigures]int64{1}}, sale("g", at.Add(2*time.Hour), true), true, false},
		{"not in the audience", campaign.Member{FirstReaction: at}, sale("h", at.Add(2*time.Hour), true), true, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := campaign.FiguresOf(tc.m, w, true, []campaign.Sale{tc.sale})
			if f.WindowSales != tc.windowSales || (len(f.Conversions) == 1) != tc.converts {
				t.Fatalf("window sales %v conversions %v", f.WindowSales, f.Conversions)
			}
			if !tc.converts {
				return
			}
			want := campaign.Conversion{SaleID: tc.sale.ID, Date: tc.sale.Date, Revenue: 100, Units: 150,
				Products: map[string]campaign.ProductFigures{"p1": {ExternalID: "P-1", Units: 150, Revenue: 100, Discount: 5}}}
			if diff := cmp.Diff(want, f.Conversions[0]); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestMemberFigures: unreachable is a bounce with no delivery, open or
// click, within the audience.
func TestMemberFigures(t *testing.T) {
	m := func(counts ...int64) campaign.Member {
		var c campaign.Member
		copy(c.Counts[:], counts)
		return c
	}
	for _, tc := range []struct {
		name                         string
		m                            campaign.Member
		audience, reacted, unreached bool
	}{
		{"sent", m(1), true, false, false},
		{"bounced", m(1, 0, 0, 0, 0, 0, 1), true, false, true},
		{"bounced, delivered", m(1, 1, 0, 0, 0, 0, 1), true, false, false},
		{"bounced, clicked", m(1, 0, 0, 1, 0, 0, 1), true, true, false},
		{"opened without a send", m(0, 0, 1), false, false, false},
	} {
		if a, r, u := tc.m.Audience(), tc.m.Reacted(), tc.m.Unreachable(); a != tc.audience || r != tc.reacted || u != tc.unreached {
			t.Errorf("%s: audience %v reacted %v unreachable %v", tc.name, a, r, u)
		}
	}
}

// TestAverageUnits: two decimals, half away from zero, 0 without sales.
func TestAverageUnits(t *testing.T) {
	for _, tc := range []struct {
		units, sales int64
		want         float64
	}{{650, 3, 2.17}, {250, 2, 1.25}, {1, 2, 0.01}, {0, 0, 0}, {100, 0, 0}} {
		if got := campaign.AverageUnits(tc.units, tc.sales); got != tc.want {
			t.Errorf("AverageUnits(%d, %d) = %v, want %v", tc.units, tc.sales, got, tc.want)
		}
	}
}
