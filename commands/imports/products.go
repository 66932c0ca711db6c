package imports

import (
	"context"
	"encoding/json"

	"github.com/jackc/pgx/v5"

	"github.com/clientele/clientele/commands"
	"github.com/clientele/clientele/domain/company"
	"github.com/clientele/clientele/domain/importing"
	"github.com/clientele/clientele/domain/product"
	"github.com/clientele/clientele/domain/values"
	"github.com/clientele/clientele/eventstore"
)

// ProductImporter imports product records: upsert by external_id, method
// A translations and method B versions, stock merged by shop (the rules
// are product.Book's), one ProductUpserted per record that changes
// something, one commit per chunk. The registry (external_id to product
// id, stream version and base language) is the table product_states, read
// with one query and written with one statement per chunk; the skus and
// eans the records declare go to product_keys, where events and sales
// find products by them (product_link.go).
type ProductImporter struct {
	store TxAppender
}

var _ Importer = (*ProductImporter)(nil)

// NewProductImporter returns the products importer.
func NewProductImporter(store TxAppender) *ProductImporter {
	if store == nil {
		panic("imports: NewProductImporter: nil store")
	}
	return &ProductImporter{store: store}
}

// Entity implements Importer.
func (*ProductImporter) Entity() importing.Entity { return importing.Products }

// ImportChunk implements Importer. Records are decided in order against
// the state the earlier records of the chunk left (importUpserts).
func (h *ProductImporter) ImportChunk(ctx context.Context, tx pgx.Tx, chunk Chunk) (importing.Outcome, error) {
	return importUpserts(ctx, tx, h.store, chunk, productUpserts)
}

// productUpserts is the products importer's part of importUpserts.
var productUpserts = upserts[product.Record]{
	entity: "products",
	parser: parseProducts,
	key:    func(r product.Record) (string, values.Ignored) { return r.ExternalID, r.Ignored },
	book: func(chunk Chunk) upsertBook[product.Record] {
		return productBook{product.NewBook(commands.NewID, chunk.Company.Currency)}
	},
}

// productBook is a chunk's registry of products: product.Book, loaded
// from product_states and saved to product_states and product_keys.
type productBook struct{ *product.Book }

func (b productBook) load(ctx context.Context, tx pgx.Tx, companyID string, externalIDs []string) (map[string]int64, error) {
	return loadProducts(ctx, tx, companyID, externalIDs, b.Book)
}

func (b productBook) decide(companyID string, r product.Record) (id, stream string, e *eventstore.Event, err error) {
	o, err := b.Decide(r)
	if err != nil || o.Event == nil {
		return o.ProductID, "", nil, err
	}
	ev := eventstore.NewEvent(product.TypeUpserted, o.Event)
	return o.ProductID, product.Stream(companyID, o.ProductID), &ev, nil
}

func (b productBook) save(ctx context.Context, tx pgx.Tx, companyID string, versions map[string]int64) error {
	if err := saveProducts(ctx, tx, companyID, b.Touched(versions)); err != nil {
		return err
	}
	return saveProductKeys(ctx, tx, companyID, b.KeyChanges())
}

// parseProducts returns the company's products parser.
func parseProducts(co company.Company) func([]byte) (product.Record, error) {
	return product.NewParser(co).Parse
}

// Prepare implements Preparer.
func (*ProductImporter) Prepare(co company.Company, records []json.RawMessage) Prepared {
	return parseChunk(records, parseProducts(co))
}
