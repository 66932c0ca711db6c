package readmodels_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/clientele/clientele/internal/pg/pgtest"
	"github.com/clientele/clientele/readmodels"
)

// TestSegmentSizeDays: a segment's size at the end of each day is the
// size now less the entries and plus the exits recorded after the day,
// days in the company's time zone; entries and exits before the first day
// and other segments' and companies' are not counted, and a segment
// without history is its size every day.
func TestSegmentSizeDays(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	loc, err := time.LoadLocation("Europe/Helsinki")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().In(loc)
	today := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, loc)
	for _, s := range []struct{ company, key string }{{"co1", "a"}, {"co1", "b"}, {"co2", "a"}} {
		if _, err := pool.Exec(ctx, `INSERT INTO segments (company_id, segment_key, name, rule, rule_text, state, created_by, created_at, updated_at, version)
			VALUES ($1, $2, $2, '{}', '{}', 'active', 'u', now(), now(), 1)`, s.company, s.key); err != nil {
			t.Fatal(err)
		}
	}
	// co1/a has members c1 and c2 now; b has c9, with no history.
	for _, m := range []struct{ company, key, customer string }{{"co1", "a", "c1"}, {"co1", "a", "c2"}, {"co1", "b", "c9"}, {"co2", "a", "x"}} {
		if _, err := pool.Exec(ctx, `INSERT INTO segment_members (company_id, segment_key, customer_id, entered_at) VALUES ($1, $2, $3, now())`,
			m.company, m.key, m.customer); err != nil {
			t.Fatal(err)
		}
	}
	// co1/a: c3 entered 40 days ago (before the chart) and left 3 days
	// ago; c1 entered 2 days ago, at 00:30 in Helsinki (the day before
	// in UTC); c2 entered today; c4 entered and left yesterday.
	for _, h := range []struct {
		company, customer string
		member            bool
		at                time.Time
	}{
		{"co1", "c3", true, today.AddDate(0, 0, -40)},
		{"co1", "c3", false, today.AddDate(0, 0, -3).Add(time.Hour)},
		{"co1", "c1", true, today.AddDate(0, 0, -2).Add(30 * time.Minute)},
		{"co1", "c4", true, today.AddDate(0, 0, -1).Add(time.Hour)},
		{"co1", "c4", false, today.AddDate(0, 0, -1).Add(2 * time.Hour)},
		{"co1", "c2", true, today.Add(time.Minute)},
		{"co2", "x", true, today.AddDate(0, 0, -2)},
	} {
		if _, err := pool.Exec(ctx, `INSERT INTO segment_history (company_id, segment_key, customer_id, member, at, cause) VALUES ($1, 'a', $2, $3, $4, 'test')`,
			h.company, h.customer, h.member, h.at); err != nil {
			t.Fatal(err)
		}
	}
	sizes, err := readmodels.NewSegments(pool).SizeDays(ctx, "co1", today.AddDate(0, 0, -4), loc)
	if err != nil {
		t.Fatal(err)
	}
	if len(sizes) != 2 {
		t.Fatalf("sizes of %d segments, want 2: %v", len(sizes), sizes)
	}
	// Days -4, -3, -2, -1, today.
	if want := []int64{1, 0, 1, 1, 2}; !slices.Equal(sizes["a"], want) {
		t.Errorf("a: %v, want %v", sizes["a"], want)
	}
	if want := []int64{1, 1, 1, 1, 1}; !slices.Equal(sizes["b"], want) {
		t.Errorf("b: %v, want %v", sizes["b"], want)
	}
	// A first day long ago is charted from MaxSizeDays days back, a day
	// before c3 entered (with c1, c2 and c3's entry and exit counted).
	sizes, err = readmodels.NewSegments(pool).SizeDays(ctx, "co1", today.AddDate(-5, 0, 0), loc)
	if err != nil {
		t.Fatal(err)
	}
	if len(sizes["a"]) != readmodels.MaxSizeDays || sizes["a"][0] != 0 {
		t.Errorf("from five years ago: %d days, the first %d; want %d days, 0", len(sizes["a"]), sizes["a"][0], readmodels.MaxSizeDays)
	}
}
