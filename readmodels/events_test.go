package readmodels_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/clientele/clientele/domain"
	"github.com/clientele/clientele/internal/pg/pgtest"
	"github.com/clientele/clientele/readmodels"
)

// TestRetrieveEvents: events are paged by their integer id in numeric
// order (9, 10, 11, not "10" < "9"), the cursor being the id in decimal;
// deleted events and other companies' are left out; filters apply.
func TestRetrieveEvents(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	for _, r := range []struct {
		company string
		id      int64
		deleted bool
		typ     string
	}{
		{"co1", 11, false, "BROWSE"}, {"co1", 9, false, "BROWSE"}, {"co1", 10, false, "SENTIMENT"},
		{"co1", 100, true, "BROWSE"}, {"co1", 2, true, "BROWSE"}, {"co2", 1, false, "BROWSE"},
	} {
		doc, _ := json.Marshal(map[string]any{"id": r.id, "type": r.typ, "is_deleted": r.deleted})
		_, err := pool.Exec(ctx, `INSERT INTO activity_events (company_id, event_id, customer_id, doc, is_deleted, version, created_at, updated_at)
			VALUES ($1, $2, 'c1', $3, $4, 1, now(), now())`, r.company, r.id, doc, r.deleted)
		if err != nil {
			t.Fatal(err)
		}
	}
	q := readmodels.NewEvents(pool)
	var got []int64
	var cursors []string
	after := ""
	for i := 0; ; i++ {
		p, err := q.Retrieve(ctx, readmodels.PageQuery{CompanyID: "co1", After: after, Limit: 2})
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, eventIDs(t, p.Docs)...)
		if p.Next == "" {
			break
		}
		if i > 2 {
			t.Fatal("too many pages")
		}
		cursors = append(cursors, p.Next)
		after = p.Next
	}
	if diff := cmp.Diff([]int64{9, 10, 11}, got); diff != "" || !cmp.Equal(cursors, []string{"10"}) {
		t.Errorf("paged (-want +got):\n%s\ncursors %q", diff, cursors)
	}
	p, err := q.Retrieve(ctx, readmodels.PageQuery{CompanyID: "co1", Filters: []readmodels.Filter{{Field: "type", Value: "BROWSE"}}, Limit: 10})
	if err != nil || !cmp.Equal(eventIDs(t, p.Docs), []int64{9, 11}) || p.Next != "" {
		t.Errorf("filtered: %s %q %v", p.Docs, p.Next, err)
	}
	p, err = q.Retrieve(ctx, readmodels.PageQuery{CompanyID: "co1", Filters: []readmodels.Filter{{Field: "id", Value: "10"}}, Limit: 10})
	if err != nil || !cmp.Equal(eventIDs(t, p.Docs), []int64{10}) {
		t.Errorf("by id: %s %v", p.Docs, err)
	}
	for _, bad := range []string{"abc", "9.5", "01x"} {
		if _, err := q.Retrieve(ctx, readmodels.PageQuery{CompanyID: "co1", After: bad, Limit: 2}); domain.ErrorCode(err) != domain.Invalid {
			t.Errorf("cursor %q: %v, want an invalid request", bad, err)
		}
	}
}

func eventIDs(t *testing.T, docs []json.RawMessage) []int64 {
	t.Helper()
	out := []int64{}
	for _, d := range docs {
		var v struct{ ID int64 }
		if err := json.Unmarshal(d, &v); err != nil {
			t.Fatal(err)
		}
		out = append(out, v.ID)
	}
	return out
}
