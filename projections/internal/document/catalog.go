package document

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// CatalogRow is a row of a catalog read model (shops, products) while
// events are applied to it: Doc is the entity in the retrieval form.
type CatalogRow struct {
	CompanyID, ID string
	Doc           map[string]any
	Version       int64
	CreatedAt     time.Time
	UpdatedAt     time.Time
	Changed       bool
}

// CatalogKey identifies an entity across companies.
type CatalogKey struct{ Company, ID string }

// Advance reports whether an event at version v is new to the row, and
// marks the row changed: a replayed event (a version the row has) is
// skipped, so applying a commit twice changes nothing.
func (r *CatalogRow) Advance(v int64, at time.Time) bool {
	if v <= r.Version {
		return false
	}
	r.Version, r.UpdatedAt, r.Changed = v, at.UTC(), true
	return true
}

// LoadCatalogRows reads the rows of keys from table (id column idCol), in
// one query; a key without a row gets a new, empty one.
func LoadCatalogRows(ctx context.Context, tx pgx.Tx, table, idCol string, keys []CatalogKey, at map[CatalogKey]time.Time) (map[CatalogKey]*CatalogRow, error) {
	companies, ids := make([]string, len(keys)), make([]string, len(keys))
	for i, k := range keys {
		companies[i], ids[i] = k.Company, k.ID
	}
	id := pgx.Identifier{idCol}.Sanitize()
	rows, err := tx.Query(ctx, fmt.Sprintf(`SELECT t.company_id, t.%s, t.doc, t.version, t.created_at
		FROM %s t JOIN unnest($1::text[], $2::text[]) AS k(company_id, %s) USING (company_id, %s)`,
		id, pgx.Identifier{table}.Sanitize(), id, id), companies, ids)
	if err != nil {
		return nil, fmt.Errorf("projections: %s: load: %w", table, err)
	}
	out := make(map[CatalogKey]*CatalogRow, len(keys))
	var r CatalogRow
	var doc []byte
	_, err = pgx.ForEachRow(rows, []any{&r.CompanyID, &r.ID, &doc, &r.Version, &r.CreatedAt}, func() error {
		row := r
		row.CreatedAt = row.CreatedAt.UTC()
		if err := DecodeNumbers(doc, &row.Doc); err != nil {
			return fmt.Errorf("doc of %s: %w", row.ID, err)
		}
		out[CatalogKey{row.CompanyID, row.ID}] = &row
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("projections: %s: load: %w", table, err)
	}
	for _, k := range keys {
		if out[k] == nil {
			out[k] = &CatalogRow{CompanyID: k.Company, ID: k.ID, Doc: map[string]any{}, CreatedAt: at[k].UTC(), UpdatedAt: at[k].UTC()}
		}
	}
	return out, nil
}

// applyFields applies Set then Unset to a document.
func applyFields(doc map[string]any, set map[string]any, unset []string) {
	for k, v := range set {
		if v == nil {
			delete(doc, k)
		} else {
			doc[k] = v
		}
	}
	for _, k := range unset {
		delete(doc, k)
	}
}
