package imports

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/clientele/clientele/commands"
	"github.com/clientele/clientele/domain/product"
	"github.com/clientele/clientele/eventstore"
)

// productLinks finds or creates the products that the events or sale rows
// of a chunk name (product.Book.Link) and gathers the products created,
// to be appended in the chunk's commit.
type productLinks struct {
	companyID string
	book      *product.Book
	versions  map[string]int64
	created   []eventstore.StreamAppend
}

// loadProductLinks loads into a book every product the references can
// reach: their product_ids, the products holding their skus and eans, and
// the synthetic products an earlier event or sale made of them. Two
// queries whatever the number of references.
func loadProductLinks(ctx context.Context, q Reader, companyID, currency string, refs []product.Ref) (*productLinks, error) {
	book := product.NewBook(commands.NewID, currency)
	var kinds, vals []string
	seen := map[string]bool{}
	for _, r := range refs {
		if r.ExternalID != "" || r.Empty() {
			continue
		}
		if k := r.Key(); !seen[k] {
			seen[k] = true
			kind, value := product.KeySKU, r.SKU
			if value == "" {
				kind, value = product.KeyEAN, r.EAN
			}
			kinds, vals = append(kinds, kind), append(vals, value)
		}
	}
	found := map[string]string{}
	if len(kinds) > 0 {
		rows, err := q.Query(ctx, `SELECT k.kind, k.value, k.external_id FROM product_keys k
			JOIN unnest((SELECT $2::text[])::text[], (SELECT $3::text[])::text[]) AS q(kind, value)
			ON k.kind = q.kind AND k.value = q.value
			WHERE k.company_id = $1`, companyID, kinds, vals)
		if err != nil {
			return nil, fmt.Errorf("imports: load product keys: %w", err)
		}
		var kind, value, ext string
		if _, err := pgx.ForEachRow(rows, []any{&kind, &value, &ext}, func() error {
			book.LoadKey(kind, value, ext)
			found[kind+":"+value] = ext
			return nil
		}); err != nil {
			return nil, fmt.Errorf("imports: load product keys: %w", err)
		}
	}
	var ids []string
	for _, r := range refs {
		switch {
		case r.Empty():
		case r.ExternalID != "":
			ids = append(ids, r.ExternalID)
		case found[r.Key()] != "":
			ids = append(ids, found[r.Key()])
		default:
			ids = append(ids, r.Key()) // a synthetic product made earlier
		}
	}
	versions, err := loadProducts(ctx, q, companyID, ids, book)
	if err != nil {
		return nil, err
	}
	return &productLinks{companyID: companyID, book: book, versions: versions}, nil
}

// after lays what prev, the links of the company's chunk before, decided
// over what l loaded (see customerLinks.after): the products prev created,
// at their versions, and the keys they declared.
func (l *productLinks) after(prev *productLinks) {
	for _, s := range prev.book.Touched(prev.versions) {
		l.book.Load(s)
		l.versions[s.ID] = s.Version
	}
	for _, k := range prev.book.KeyChanges() {
		l.book.LoadKey(k.Kind, k.Value, k.ExternalID)
	}
}

// link returns the product r names, creating it when none matches; r
// must not be empty.
func (l *productLinks) link(r product.Ref) product.Outcome {
	o := l.book.Link(r)
	if o.Event != nil {
		l.created = append(l.created, eventstore.StreamAppend{
			StreamID: product.Stream(l.companyID, o.ProductID), ExpectedVersion: eventstore.NoStream,
			Events: []eventstore.Event{eventstore.NewEvent(product.TypeUpserted, o.Event)},
		})
	}
	return o
}

// save writes the products created and the keys they declared.
func (l *productLinks) save(ctx context.Context, tx pgx.Tx) error {
	if err := saveProducts(ctx, tx, l.companyID, l.book.Touched(l.versions)); err != nil {
		return err
	}
	return saveProductKeys(ctx, tx, l.companyID, l.book.KeyChanges())
}

// saveProductKeys upserts the keys in one statement.
func saveProductKeys(ctx context.Context, tx pgx.Tx, companyID string, keys []product.KeyChange) error {
	if len(keys) == 0 {
		return nil
	}
	kinds, vals, ext := make([]string, len(keys)), make([]string, len(keys)), make([]string, len(keys))
	for i, k := range keys {
		kinds[i], vals[i], ext[i] = k.Kind, k.Value, k.ExternalID
	}
	_, err := tx.Exec(ctx, `INSERT INTO product_keys (company_id, kind, value, external_id)
		SELECT $1, * FROM unnest($2::text[], $3::text[], $4::text[])
		ON CONFLICT (company_id, kind, value) DO UPDATE SET external_id = EXCLUDED.external_id`,
		companyID, kinds, vals, ext)
	if err != nil {
		return fmt.Errorf("imports: save product keys: %w", err)
	}
	return nil
}
