package datasync_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/clientele/clientele/domain/customer"
)

// TestDatasyncForget: forgetting a customer anonymises the datatargets'
// earlier messages about it, so that no queue row holds the person's data;
// a rebuild after the forgetting (the key gone) gives the same rows, and a
// from_start datatarget created afterwards never sees the data.
func TestDatasyncForget(t *testing.T) {
	e := newDatasyncEnv(t)
	all := e.datatarget("all", nil, false)
	some := e.datatarget("some", []string{"email"}, false)
	e.set("p1", map[string]any{"email": "zq-secret@example.org", "first_name": "Xyzzysecret"})
	e.set("p1", map[string]any{"last_name": "Plughsecret"})
	e.End(e.co.ID, "p1", customer.TypeDeleted)
	e.set("k1", map[string]any{"email": "keep@example.org"})
	if got := e.messages(all); len(got) != 4 || got[1].Data["last_name"] != "Plughsecret" {
		t.Fatalf("before forgetting: %+v", got)
	}
	secrets := []string{"zq-secret", "Xyzzysecret", "Plughsecret"}
	if n := e.count(secrets...); n != 6 {
		t.Fatalf("%d rows hold the secrets before forgetting, want 6: the search is wrong", n)
	}
	before := e.tables()
	e.rebuild()
	if diff := cmp.Diff(before, e.tables()); diff != "" {
		t.Errorf("rebuilt before forgetting (-before +after):\n%s", diff)
	}

	e.End(e.co.ID, "p1", customer.TypeForgotten)
	late := e.datatarget("late", nil, true)
	gone := func(deleted bool) map[string]any {
		return map[string]any{"id": "p1", "is_deleted": deleted, "is_forgotten": true}
	}
	keep := map[string]any{"id": "k1", "is_deleted": false, "is_forgotten": false, "email": "keep@example.org",
		"tags": []any{}, "mailing_lists": []any{}}
	wantAll := []map[string]any{gone(false), gone(false), gone(true), keep, gone(true)}
	for _, id := range []string{all, late} {
		var got []map[string]any
		for _, m := range e.messages(id) {
			got = append(got, m.Data)
		}
		if diff := cmp.Diff(wantAll, got); diff != "" {
			t.Errorf("datatarget %s after forgetting (-want +got):\n%s", id, diff)
		}
	}
	if got := e.messages(some); len(got) != 5 || !cmp.Equal(got[3].Data, map[string]any{"id": "k1", "is_deleted": false,
		"is_forgotten": false, "email": "keep@example.org"}) || !cmp.Equal(got[0].Data, gone(false)) {
		t.Errorf("restricted datatarget after forgetting: %+v", got)
	}
	if n := e.count(secrets...); n != 0 {
		t.Errorf("%d rows still hold the forgotten customer's data", n)
	}

	after := e.tables()
	e.rebuild()
	if diff := cmp.Diff(after, e.tables()); diff != "" {
		t.Errorf("rebuilt after forgetting (-before +after):\n%s", diff)
	}
	if n := e.count(secrets...); n != 0 {
		t.Errorf("%d rows hold the forgotten customer's data after the rebuild", n)
	}
}

// count counts the datasync rows (of the live tables and any left in a
// rebuild's scratch schema) that contain any of the values.
func (e *datasyncEnv) count(values ...string) int {
	e.T.Helper()
	var n int
	err := e.Pool.QueryRow(context.Background(), `SELECT count(*) FROM datasync_messages m
		WHERE EXISTS (SELECT FROM unnest($1::text[]) v WHERE strpos(m::text, v) > 0)`, values).Scan(&n)
	if err != nil {
		e.T.Fatal(err)
	}
	return n
}
