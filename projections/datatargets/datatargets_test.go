package datatargets_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/clientele/clientele/commands"
	"github.com/clientele/clientele/domain/access"
	"github.com/clientele/clientele/domain/company"
	"github.com/clientele/clientele/domain/datatarget"
	"github.com/clientele/clientele/eventstore/postgres"
	"github.com/clientele/clientele/internal/crypto"
	"github.com/clientele/clientele/projections"
	"github.com/clientele/clientele/projections/datatargets"
	"github.com/clientele/clientele/projections/internal/projectiontest"
)

// datatargetTables is what the datatargets projector keeps, in a form
// that compares: bodies as jsonb text (a rebuild reads them back from the
// log's jsonb, so only their formatting may differ).
type datatargetTables struct {
	Datatargets []string
	Outlets     []string
	Messages    []string
}

func readDatatargetTables(t *testing.T, pool *pgxpool.Pool) datatargetTables {
	t.Helper()
	q := func(sql string) []string {
		rows, err := pool.Query(context.Background(), sql)
		if err != nil {
			t.Fatal(err)
		}
		out, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	return datatargetTables{
		Datatargets: q(`SELECT concat_ws('|', company_id, id, datatarget_type, name, description, enabled, created_by,
			created_at, updated_at, last_message_number) FROM datatargets ORDER BY id`),
		Outlets: q(`SELECT concat_ws('|', id, datatarget_id, request::text, is_batched, max_batch_size, min_request_interval_ms,
			secret, failure_policy::text, enabled, disabled_reason) FROM datatarget_outlets ORDER BY id`),
		Messages: q(`SELECT concat_ws('|', datatarget_id, number, company_id, body::jsonb::text, posted_at)
			FROM datatarget_messages ORDER BY datatarget_id, number`),
	}
}

// TestDatatargetsProjection drives the projector through the commands,
// with concurrent posters, checks the tables, then rebuilds them from the
// log and finds every message under the same number.
func TestDatatargetsProjection(t *testing.T) {
	ctx := context.Background()
	pool := projectiontest.PgtestPool(t)
	store := projectiontest.InlineStore(pool)
	kr, err := crypto.NewKeyring(crypto.NewMasterKey())
	if err != nil {
		t.Fatal(err)
	}
	cmds := commands.New(store, time.Now, commands.WithSealer(kr))
	co, err := cmds.CreateCompany.Handle(ctx, commands.CreateCompany{Principal: access.System(""), Slug: "acme", Settings: company.Settings{Name: "Acme"}})
	if err != nil {
		t.Fatal(err)
	}
	p := access.System(co.ID)
	var dts []datatarget.Datatarget
	for _, name := range []string{"a", "b"} {
		d, err := cmds.CreateDatatarget.Handle(ctx, commands.CreateDatatarget{Principal: p, Type: datatarget.Messages, Name: name})
		if err != nil {
			t.Fatal(err)
		}
		dts = append(dts, d)
	}
	name, desc := "renamed", "the first"
	if _, err := cmds.UpdateDatatarget.Handle(ctx, commands.UpdateDatatarget{Principal: p, DatatargetID: dts[0].ID, Patch: datatarget.Patch{Name: &name, Description: &desc}}); err != nil {
		t.Fatal(err)
	}
	o, err := cmds.CreateOutlet.Handle(ctx, commands.CreateOutlet{Principal: p, DatatargetID: dts[0].ID, Spec: datatarget.OutletSpec{
		Type: "webhook", IsBatched: true, Request: datatarget.Request{URL: "https://example.com/", Content: json.RawMessage(`{"z": 1, "a": "{(data)}"}`)},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if err := cmds.DisableOutlet.BySystem(ctx, co.ID, dts[0].ID, o.ID, "gone"); err != nil {
		t.Fatal(err)
	}
	// Changed, paused, then resumed; the second datatarget paused; a
	// third one, and an outlet of the second, deleted.
	url, no, yes := "https://example.com/other", false, true
	for _, patch := range []datatarget.OutletPatch{
		{Request: &datatarget.RequestPatch{URL: &url}, FailurePolicy: &datatarget.FailurePolicy{MaxAttempts: 3}},
		{Enabled: &yes}, {Enabled: &no}, {Enabled: &yes},
	} {
		if err := cmds.ChangeOutlet.Handle(ctx, commands.ChangeOutlet{Principal: p, DatatargetID: dts[0].ID, OutletID: o.ID, Patch: patch}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := cmds.UpdateDatatarget.Handle(ctx, commands.UpdateDatatarget{Principal: p, DatatargetID: dts[1].ID, Patch: datatarget.Patch{Enabled: &no}}); err != nil {
		t.Fatal(err)
	}
	gone, err := cmds.CreateOutlet.Handle(ctx, commands.CreateOutlet{Principal: p, DatatargetID: dts[1].ID, Spec: datatarget.OutletSpec{
		Type: "webhook", Request: datatarget.Request{URL: "https://example.com/"}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := cmds.DeleteOutlet.Handle(ctx, commands.DeleteOutlet{Principal: p, DatatargetID: dts[1].ID, OutletID: gone.ID}); err != nil {
		t.Fatal(err)
	}
	third, err := cmds.CreateDatatarget.Handle(ctx, commands.CreateDatatarget{Principal: p, Type: datatarget.Messages, Name: "c"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cmds.PostDatatargetMessages.Handle(ctx, commands.PostDatatargetMessages{Principal: p, DatatargetID: third.ID, Messages: []json.RawMessage{json.RawMessage(`{"a":1}`)}}); err != nil {
		t.Fatal(err)
	}
	if _, err := cmds.CreateOutlet.Handle(ctx, commands.CreateOutlet{Principal: p, DatatargetID: third.ID, Spec: datatarget.OutletSpec{
		Type: "webhook", Request: datatarget.Request{URL: "https://example.com/"}}}); err != nil {
		t.Fatal(err)
	}
	if err := cmds.DeleteDatatarget.Handle(ctx, commands.DeleteDatatarget{Principal: p, DatatargetID: third.ID}); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d := dts[i%2]
			for j := range 10 {
				msgs := []json.RawMessage{json.RawMessage(fmt.Sprintf(`{"poster": %d, "post": %d, "k": [1, 2]}`, i, j)), json.RawMessage(`{"b": true, "a": null}`)}
				if _, err := cmds.PostDatatargetMessages.Handle(ctx, commands.PostDatatargetMessages{Principal: p, DatatargetID: d.ID, Messages: msgs}); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()

	before := readDatatargetTables(t, pool)
	for _, d := range dts {
		var n, max, count int64
		if err := pool.QueryRow(ctx, `SELECT d.last_message_number, coalesce(max(m.number), 0), count(m.number)
			FROM datatargets d LEFT JOIN datatarget_messages m ON m.datatarget_id = d.id WHERE d.id = $1 GROUP BY d.last_message_number`, d.ID).Scan(&n, &max, &count); err != nil {
			t.Fatal(err)
		}
		if n != 60 || max != 60 || count != 60 {
			t.Errorf("datatarget %s: last_message_number %d, max %d, count %d; want 60", d.Name, n, max, count)
		}
	}
	var request, reason string
	var enabled bool
	if err := pool.QueryRow(ctx, `SELECT request::text, enabled, disabled_reason FROM datatarget_outlets WHERE id = $1`, o.ID).Scan(&request, &enabled, &reason); err != nil {
		t.Fatal(err)
	}
	if !enabled || reason != "" || !json.Valid([]byte(request)) || !strings.Contains(request, "/other") {
		t.Errorf("outlet: enabled %v (%q), request %s", enabled, reason, request)
	}
	if want := []string{dts[0].ID, dts[1].ID}; len(before.Datatargets) != 2 || len(before.Outlets) != 1 ||
		!strings.Contains(before.Datatargets[0], want[0]) || !strings.Contains(before.Datatargets[1], want[1]+"|") ||
		!strings.Contains(before.Datatargets[1], "|f|") {
		t.Errorf("after the deletions and the pause: %q %q", before.Datatargets, before.Outlets)
	}

	if err := projections.Rebuild(ctx, pool, store, postgres.EventLog{}, datatargets.Datatargets{}, projections.KindInline, nil); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(before, readDatatargetTables(t, pool)); diff != "" {
		t.Errorf("after a rebuild (-before +after):\n%s", diff)
	}
	// The content template keeps its key order through the log (compacted).
	var content string
	if err := pool.QueryRow(ctx, `SELECT request->>'content' FROM datatarget_outlets WHERE id = $1`, o.ID).Scan(&content); err != nil {
		t.Fatal(err)
	}
	if content != `{"z":1,"a":"{(data)}"}` {
		t.Errorf("content after rebuild %s", content)
	}
}
