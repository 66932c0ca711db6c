package retrieval

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/clientele/clientele/domain/product"
	"github.com/clientele/clientele/eventstore"
	"github.com/clientele/clientele/projections/internal/document"
)

// Products keeps the products table: each product as retrieval shows it,
// the base record with its "versions" and "stock" (document/products.go). It
// is async, like every entity an import fills.
type Products struct{}

// NewProducts returns the projector.
func NewProducts() *Products { return &Products{} }

// Name implements Projector.
func (*Products) Name() string { return "products" }

// Tables implements Projector.
func (*Products) Tables() []string { return []string{"products"} }

// EventTypes implements TypeFilter.
func (*Products) EventTypes() []string { return []string{product.TypeUpserted} }

// Apply implements Projector in two round trips whatever the number of
// events: the products' current rows, then one upsert of the changed ones.
func (*Products) Apply(ctx context.Context, tx pgx.Tx, events []eventstore.RecordedEvent) error {
	type productEvent struct {
		e    *eventstore.RecordedEvent
		data product.Upserted
		key  document.CatalogKey
	}
	var evs []productEvent
	var order []document.CatalogKey
	first := map[document.CatalogKey]time.Time{}
	for i, e := range events {
		if e.Type != product.TypeUpserted {
			continue
		}
		pe := productEvent{e: &events[i]}
		if err := document.DecodeNumbersEvent(e, &pe.data); err != nil {
			return err
		}
		pe.key = document.CatalogKey{Company: e.Metadata.CompanyID, ID: pe.data.ProductID}
		if _, ok := first[pe.key]; !ok {
			first[pe.key] = e.RecordedAt
			order = append(order, pe.key)
		}
		evs = append(evs, pe)
	}
	if len(order) == 0 {
		return nil
	}
	rows, err := document.LoadCatalogRows(ctx, tx, "products", "product_id", order, first)
	if err != nil {
		return err
	}
	for _, pe := range evs {
		if r := rows[pe.key]; r.Advance(pe.e.StreamVersion, pe.e.RecordedAt) {
			document.ApplyProduct(r.Doc, pe.data)
		}
	}
	var out []*document.CatalogRow
	for _, k := range order {
		if r := rows[k]; r.Changed {
			out = append(out, r)
		}
	}
	return writeProductRows(ctx, tx, out)
}

// writeProductRows upserts the rows in one statement.
func writeProductRows(ctx context.Context, tx pgx.Tx, out []*document.CatalogRow) error {
	if len(out) == 0 {
		return nil
	}
	n := len(out)
	companies, ids, docs, deleted := make([]string, n), make([]string, n), make([][]byte, n), make([]bool, n)
	versions, created, updated := make([]int64, n), make([]time.Time, n), make([]time.Time, n)
	for i, r := range out {
		doc, err := json.Marshal(r.Doc)
		if err != nil {
			return fmt.Errorf("projections: products: encode %s: %w", r.ID, err)
		}
		deleted[i] = r.Doc[product.FieldIsDeleted] == true
		companies[i], ids[i], docs[i], versions[i], created[i], updated[i] = r.CompanyID, r.ID, doc, r.Version, r.CreatedAt, r.UpdatedAt
	}
	_, err := tx.Exec(ctx, `
		INSERT INTO products (company_id, product_id, doc, is_deleted, version, created_at, updated_at)
		SELECT * FROM unnest($1::text[], $2::text[], $3::jsonb[], $4::boolean[], $5::bigint[], $6::timestamptz[], $7::timestamptz[])
		ON CONFLICT (company_id, product_id) DO UPDATE SET doc = EXCLUDED.doc, is_deleted = EXCLUDED.is_deleted,
			version = EXCLUDED.version, updated_at = EXCLUDED.updated_at`,
		companies, ids, docs, deleted, versions, created, updated)
	if err != nil {
		return fmt.Errorf("projections: products: write: %w", err)
	}
	return nil
}
