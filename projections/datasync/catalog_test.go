package datasync_test

import (
	"context"
	"encoding/json"
	"github.com/clientele/clientele/internal/pg/pgtest"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"

	"github.com/clientele/clientele/commands"
	"github.com/clientele/clientele/domain/access"
	"github.com/clientele/clientele/domain/datatarget"
	"github.com/clientele/clientele/domain/product"
	"github.com/clientele/clientele/domain/shop"
	"github.com/clientele/clientele/eventstore"
	"github.com/clientele/clientele/eventstore/postgres"
	"github.com/clientele/clientele/projections"
	"github.com/clientele/clientele/projections/retrieval"
)

// TestDatasyncProducts: every change of a product after a datatarget's
// creation (or since the start, with from_start) is one message in log
// order, holding the product as retrieval shows it after the change
// (the products projector's document), restricted to the datatarget's
// fields plus external_id and is_deleted; a rebuild gives the same bytes.
func TestDatasyncProducts(t *testing.T) {
	e := newDatasyncEnv(t)
	e.product(e.co.ID, "p0", "P-0", true, product.Changes{Set: map[string]any{"title": "Zero", "price": 100}})
	all := e.datasyncOf(datatarget.Products, "all", nil, false)
	some := e.datasyncOf(datatarget.Products, "some", []string{"price", "nope"}, false)
	customers := e.datatarget("customers", nil, true)
	e.product(e.co.ID, "p1", "P-1", true, product.Changes{Set: map[string]any{"title": "One", "price": 250, "tags": []string{"a"}},
		Stock: []product.Stock{{ShopID: "S1", Quantity: 3}}})
	e.product("other", "p9", "P-9", true, product.Changes{Set: map[string]any{"title": "Other"}})
	e.set("c1", map[string]any{"email": "ann@example.com"})
	e.product(e.co.ID, "p0", "P-0", false, product.Changes{Unset: []string{"title"},
		Versions: map[string]map[string]product.FieldChanges{product.VersionLanguage: {"fi": {Set: map[string]any{"title": "Nolla"}}}}})
	e.product(e.co.ID, "p1", "P-1", false, product.Changes{Set: map[string]any{"is_deleted": true},
		Stock: []product.Stock{{ShopID: "S2", Quantity: 1.5}}})
	fromStart := e.datasyncOf(datatarget.Products, "from start", nil, true)
	e.product(e.co.ID, "p2", "P-2", true, product.Changes{Set: map[string]any{"price": 5}})

	flags := func(d map[string]any) map[string]any {
		d["visible"], d["exclude_from_recommendations"] = true, true
		if _, ok := d["is_deleted"]; !ok {
			d["is_deleted"] = false
		}
		return d
	}
	p0 := flags(map[string]any{"external_id": "P-0", "title": "Zero", "price": 100.0})
	p0b := flags(map[string]any{"external_id": "P-0", "price": 100.0, "versions": map[string]any{"language": map[string]any{"fi": map[string]any{"title": "Nolla"}}}})
	p1 := flags(map[string]any{"external_id": "P-1", "title": "One", "price": 250.0, "tags": []any{"a"},
		"stock": []any{map[string]any{"shop_id": "S1", "quantity": 3.0}}})
	p1d := flags(map[string]any{"external_id": "P-1", "title": "One", "price": 250.0, "tags": []any{"a"}, "is_deleted": true,
		"stock": []any{map[string]any{"shop_id": "S1", "quantity": 3.0}, map[string]any{"shop_id": "S2", "quantity": 1.5}}})
	p2 := flags(map[string]any{"external_id": "P-2", "price": 5.0})
	pos := e.positionsOf(product.TypeUpserted)
	want := func(from int, data ...map[string]any) []syncMessage {
		out := make([]syncMessage, len(data))
		for i, d := range data {
			out[i] = syncMessage{UpdateID: pos[from+i], Datatype: "products", Data: d}
		}
		return out
	}
	if diff := cmp.Diff(want(1, p1, p0b, p1d, p2), e.messages(all)); diff != "" {
		t.Errorf("all fields (-want +got):\n%s", diff)
	}
	only := func(d map[string]any) map[string]any {
		out := map[string]any{}
		for _, k := range []string{"external_id", "is_deleted", "price"} {
			if v, ok := d[k]; ok {
				out[k] = v
			}
		}
		return out
	}
	if diff := cmp.Diff(want(1, only(p1), only(p0b), only(p1d), only(p2)), e.messages(some)); diff != "" {
		t.Errorf("some fields (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want(0, p0, p1, p0b, p1d, p2), e.messages(fromStart)); diff != "" {
		t.Errorf("from start (-want +got):\n%s", diff)
	}
	if got := e.messages(customers); len(got) != 1 || got[0].Datatype != "customers" {
		t.Errorf("customers datatarget: %v", got)
	}

	// The last message of each product is its read-model document.
	docs := e.readModel(retrieval.NewProducts(), `SELECT doc::text FROM products WHERE company_id = $1 ORDER BY product_id`)
	if diff := cmp.Diff([]map[string]any{p0b, p1d, p2}, docs); diff != "" {
		t.Errorf("read model (-messages +read model):\n%s", diff)
	}

	before := e.tables()
	e.rebuild()
	if diff := cmp.Diff(before, e.tables()); diff != "" {
		t.Errorf("after a rebuild (-before +after):\n%s", diff)
	}
	e.applyAll()
	if diff := cmp.Diff(before, e.tables()); diff != "" {
		t.Errorf("applied twice (-once +twice):\n%s", diff)
	}
}

// TestDatasyncShops: the same for shops, whose messages always carry
// external_id.
func TestDatasyncShops(t *testing.T) {
	e := newDatasyncEnv(t)
	e.shop(e.co.ID, "s0", "S-0", true, map[string]any{"name": "Zero", "city": "Oulu", "is_hidden": false}, nil)
	all := e.datasyncOf(datatarget.Shops, "all", nil, false)
	some := e.datasyncOf(datatarget.Shops, "some", []string{"city"}, false)
	e.shop(e.co.ID, "s1", "S-1", true, map[string]any{"name": "One", "shop_type": "online"}, nil)
	e.product(e.co.ID, "p0", "P-0", true, product.Changes{Set: map[string]any{"title": "Zero"}})
	e.shop("other", "s9", "S-9", true, map[string]any{"name": "Other"}, nil)
	e.shop(e.co.ID, "s0", "S-0", false, map[string]any{"is_hidden": true}, []string{"city"})
	fromStart := e.datasyncOf(datatarget.Shops, "from start", nil, true)
	e.shop(e.co.ID, "s1", "S-1", false, map[string]any{"city": "Turku"}, nil)

	s0 := map[string]any{"external_id": "S-0", "name": "Zero", "city": "Oulu", "is_hidden": false}
	s0b := map[string]any{"external_id": "S-0", "name": "Zero", "is_hidden": true}
	s1 := map[string]any{"external_id": "S-1", "name": "One", "shop_type": "online", "is_hidden": false}
	s1b := map[string]any{"external_id": "S-1", "name": "One", "shop_type": "online", "is_hidden": false, "city": "Turku"}
	pos := e.positionsOf(shop.TypeUpserted)
	want := func(from int, data ...map[string]any) []syncMessage {
		out := make([]syncMessage, len(data))
		for i, d := range data {
			out[i] = syncMessage{UpdateID: pos[from+i], Datatype: "shops", Data: d}
		}
		return out
	}
	if diff := cmp.Diff(want(1, s1, s0b, s1b), e.messages(all)); diff != "" {
		t.Errorf("all fields (-want +got):\n%s", diff)
	}
	only := func(d map[string]any) map[string]any {
		out := map[string]any{"external_id": d["external_id"]}
		if v, ok := d["city"]; ok {
			out["city"] = v
		}
		return out
	}
	if diff := cmp.Diff(want(1, only(s1), only(s0b), only(s1b)), e.messages(some)); diff != "" {
		t.Errorf("some fields (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want(0, s0, s1, s0b, s1b), e.messages(fromStart)); diff != "" {
		t.Errorf("from start (-want +got):\n%s", diff)
	}
	docs := e.readModel(retrieval.NewShops(), `SELECT doc::text FROM shops WHERE company_id = $1 ORDER BY shop_id`)
	if diff := cmp.Diff([]map[string]any{s0b, s1b}, docs); diff != "" {
		t.Errorf("read model (-messages +read model):\n%s", diff)
	}

	before := e.tables()
	e.rebuild()
	if diff := cmp.Diff(before, e.tables()); diff != "" {
		t.Errorf("after a rebuild (-before +after):\n%s", diff)
	}
}

// datasyncOf creates a datasync datatarget of dt.
func (e *datasyncEnv) datasyncOf(dt datatarget.Datatype, name string, fields []string, fromStart bool) string {
	e.T.Helper()
	d, err := e.cmds.CreateDatatarget.Handle(context.Background(), commands.CreateDatatarget{
		Principal: access.System(e.co.ID), Type: datatarget.Datasync, Name: name,
		Settings: datatarget.Settings{Datatype: dt, Fields: fields, FromStart: fromStart},
	})
	if err != nil {
		e.T.Fatal(err)
	}
	return d.ID
}

// product appends a ProductUpserted, as the products import does.
func (e *datasyncEnv) product(company, id, externalID string, created bool, ch product.Changes) {
	e.T.Helper()
	e.appendEvent(company, product.Stream(company, id), product.TypeUpserted, product.Upserted{ProductID: id, ExternalID: externalID, Created: created, Changes: ch})
}

// shop appends a ShopUpserted, as the shops import does.
func (e *datasyncEnv) shop(company, id, externalID string, created bool, set map[string]any, unset []string) {
	e.T.Helper()
	e.appendEvent(company, shop.Stream(company, id), shop.TypeUpserted, shop.Upserted{ShopID: id, ExternalID: externalID, Created: created, Set: set, Unset: unset})
}

func (e *datasyncEnv) appendEvent(company, stream, typ string, data any) {
	e.T.Helper()
	b, err := json.Marshal(data)
	if err != nil {
		e.T.Fatal(err)
	}
	_, err = e.Store.Append(context.Background(), eventstore.Commit{
		Metadata: eventstore.Metadata{CompanyID: company, Source: "test"},
		Streams: []eventstore.StreamAppend{{StreamID: stream,
			ExpectedVersion: eventstore.Any, Events: []eventstore.Event{{Type: typ, Data: b}}}},
	})
	if err != nil {
		e.T.Fatal(err)
	}
}

// positionsOf are the global positions of the company's events of type
// typ, as update ids, in log order.
func (e *datasyncEnv) positionsOf(typ string) []string {
	e.T.Helper()
	return pgtest.EventPositions(e.T, e.Pool, "company_id = $1 AND event_type = $2", e.co.ID, typ)
}

// readModel applies the whole log with p in a transaction it rolls back,
// and returns the company's documents that query (with $1 the company)
// reads from p's table.
func (e *datasyncEnv) readModel(p projections.Projector, query string) []map[string]any {
	e.T.Helper()
	ctx := context.Background()
	tx, err := e.Pool.Begin(ctx)
	if err != nil {
		e.T.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	rows, err := tx.Query(ctx, `SELECT stream_id, stream_version, event_type, data, metadata, recorded_at,
		transaction_id::text, global_position FROM events ORDER BY events.transaction_id, events.global_position`)
	if err != nil {
		e.T.Fatal(err)
	}
	events, err := postgres.ScanEvents(rows)
	if err != nil {
		e.T.Fatal(err)
	}
	if err := p.Apply(ctx, tx, events); err != nil {
		e.T.Fatal(err)
	}
	rows, err = tx.Query(ctx, query, e.co.ID)
	if err != nil {
		e.T.Fatal(err)
	}
	docs, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		e.T.Fatal(err)
	}
	out := make([]map[string]any, len(docs))
	for i, d := range docs {
		if err := json.Unmarshal([]byte(d), &out[i]); err != nil {
			e.T.Fatal(err)
		}
	}
	return out
}
