package retrieval

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/clientele/clientele/domain/shop"
	"github.com/clientele/clientele/eventstore"
	"github.com/clientele/clientele/projections/internal/document"
)

// Shops keeps the shops table: each shop as retrieval shows it. It is
// async, like every entity an import fills.
type Shops struct{}

// NewShops returns the projector.
func NewShops() *Shops { return &Shops{} }

// Name implements Projector.
func (*Shops) Name() string { return "shops" }

// Tables implements Projector.
func (*Shops) Tables() []string { return []string{"shops"} }

// EventTypes implements TypeFilter.
func (*Shops) EventTypes() []string { return []string{shop.TypeUpserted} }

// Apply implements Projector in two round trips whatever the number of
// events: the shops' current rows, then one upsert of the changed ones.
func (*Shops) Apply(ctx context.Context, tx pgx.Tx, events []eventstore.RecordedEvent) error {
	type shopEvent struct {
		e    *eventstore.RecordedEvent
		data shop.Upserted
		key  document.CatalogKey
	}
	var evs []shopEvent
	var order []document.CatalogKey
	first := map[document.CatalogKey]time.Time{}
	for i, e := range events {
		if e.Type != shop.TypeUpserted {
			continue
		}
		se := shopEvent{e: &events[i]}
		if err := document.DecodeNumbersEvent(e, &se.data); err != nil {
			return err
		}
		se.key = document.CatalogKey{Company: e.Metadata.CompanyID, ID: se.data.ShopID}
		if _, ok := first[se.key]; !ok {
			first[se.key] = e.RecordedAt
			order = append(order, se.key)
		}
		evs = append(evs, se)
	}
	if len(order) == 0 {
		return nil
	}
	rows, err := document.LoadCatalogRows(ctx, tx, "shops", "shop_id", order, first)
	if err != nil {
		return err
	}
	for _, se := range evs {
		r := rows[se.key]
		if r.Advance(se.e.StreamVersion, se.e.RecordedAt) {
			document.ApplyShop(r.Doc, se.data)
		}
	}
	var out []*document.CatalogRow
	for _, k := range order {
		if r := rows[k]; r.Changed {
			out = append(out, r)
		}
	}
	return writeShopRows(ctx, tx, out)
}

// writeShopRows upserts the rows in one statement.
func writeShopRows(ctx context.Context, tx pgx.Tx, out []*document.CatalogRow) error {
	if len(out) == 0 {
		return nil
	}
	n := len(out)
	companies, ids, docs := make([]string, n), make([]string, n), make([][]byte, n)
	versions, created, updated := make([]int64, n), make([]time.Time, n), make([]time.Time, n)
	for i, r := range out {
		doc, err := json.Marshal(r.Doc)
		if err != nil {
			return fmt.Errorf("projections: shops: encode %s: %w", r.ID, err)
		}
		companies[i], ids[i], docs[i], versions[i], created[i], updated[i] = r.CompanyID, r.ID, doc, r.Version, r.CreatedAt, r.UpdatedAt
	}
	_, err := tx.Exec(ctx, `
		INSERT INTO shops (company_id, shop_id, doc, version, created_at, updated_at)
		SELECT * FROM unnest($1::text[], $2::text[], $3::jsonb[], $4::bigint[], $5::timestamptz[], $6::timestamptz[])
		ON CONFLICT (company_id, shop_id) DO UPDATE SET doc = EXCLUDED.doc, version = EXCLUDED.version,
			updated_at = EXCLUDED.updated_at`,
		companies, ids, docs, versions, created, updated)
	if err != nil {
		return fmt.Errorf("projections: shops: write: %w", err)
	}
	return nil
}
