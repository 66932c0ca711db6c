package systemtest_test

import (
	"context"
	"math"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"

	"github.com/clientele/clientele/api"
	"github.com/clientele/clientele/app"
	"github.com/clientele/clientele/eventstore/postgres"
	"github.com/clientele/clientele/projections/datasync"
	retrievalproj "github.com/clientele/clientele/projections/retrieval"
)

// TestDatasyncProducts creates products datasync datatargets through the
// API and retrieves the messages of a products upload: one per change,
// in log order, data being the product as retrieval shows it, restricted
// to fields plus external_id and is_deleted.
func TestDatasyncProducts(t *testing.T) {
	e := newEnv(t, func(c *api.Config, _ *app.Application) { c.RateLimit = math.Inf(1) })
	e.runProjections(retrievalproj.NewProducts(), datasync.NewDatasync(e.keys, postgres.EventLog{}))
	e.runImports()
	admin := e.userToken(e.admin, acmeHost)

	e.importAll(admin, productsPath, `{"products": [{"external_id": "P-0", "title": "Zero", "price": 100}]}`)
	some := e.createDatasync(admin, "prices", map[string]any{"datatype": "products", "fields": []string{"price"}})
	if some["datatype"] != "products" || !cmp.Equal(some["fields"], []any{"price"}) {
		t.Errorf("datatarget %v", some)
	}
	all := e.createDatasync(admin, "all", map[string]any{"datatype": "products", "from_start": true})
	if rej := e.importAll(admin, productsPath, `{"products": [{"external_id": "P-1", "title": "One", "price": "250"},
		{"external_id": "P-0", "price": 120}]}`); len(rej) != 0 {
		t.Fatalf("rejections %v", rej)
	}
	e.waitProjections()

	positions := e.productPositions()
	if len(positions) != 3 {
		t.Fatalf("product events %v", positions)
	}
	p0, p1 := e.product(admin, "P-0"), e.product(admin, "P-1")
	page := e.syncMessages(admin, some["id"].(string))
	want := []map[string]any{
		{"external_id": "P-1", "is_deleted": false, "price": p1["price"]},
		{"external_id": "P-0", "is_deleted": false, "price": 120.0},
	}
	if len(page.Messages) != 2 || page.LastMessageNumber != 2 {
		t.Fatalf("messages: %+v", page)
	}
	for i, m := range page.Messages {
		if m.UpdateID != positions[i+1] || m.Datatype != "products" || !cmp.Equal(m.Data, want[i]) {
			t.Errorf("message %d: %+v, want update %s, data %v", i+1, m, positions[i+1], want[i])
		}
	}

	// From the start, every field: the last message of each product is
	// its retrieval document.
	page = e.syncMessages(admin, all["id"].(string))
	if len(page.Messages) != 3 || page.LastMessageNumber != 3 {
		t.Fatalf("from start: %+v", page)
	}
	for i, m := range page.Messages {
		if m.UpdateID != positions[i] || m.Datatype != "products" {
			t.Errorf("from start message %d: %+v", i+1, m)
		}
	}
	if diff := cmp.Diff(p1, page.Messages[1].Data); diff != "" {
		t.Errorf("P-1 (-retrieval +message):\n%s", diff)
	}
	if diff := cmp.Diff(p0, page.Messages[2].Data); diff != "" {
		t.Errorf("P-0 (-retrieval +message):\n%s", diff)
	}
	if page.Messages[0].Data["title"] != "Zero" || page.Messages[0].Data["price"] != 100.0 {
		t.Errorf("first message %v", page.Messages[0].Data)
	}
}

// productPositions are the global positions of acme's product events, as
// update ids, in log order.
func (e *env) productPositions() []string {
	e.t.Helper()
	rows, err := e.pool.Query(context.Background(), `SELECT global_position FROM events
		WHERE company_id = $1 AND event_type = 'ProductUpserted' ORDER BY transaction_id, global_position`, e.acme.ID)
	if err != nil {
		e.t.Fatal(err)
	}
	ps, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		e.t.Fatal(err)
	}
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = strconv.FormatInt(p, 10)
	}
	return out
}
