package imports

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/clientele/clientele/commands"
	"github.com/clientele/clientele/domain/company"
	"github.com/clientele/clientele/domain/importing"
	"github.com/clientele/clientele/domain/product"
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
// the state the earlier records of the chunk left.
func (h *ProductImporter) ImportChunk(ctx context.Context, tx pgx.Tx, chunk Chunk) (importing.Outcome, error) {
	meta, err := chunkMetadata(chunk, "products")
	if err != nil {
		return importing.Outcome{}, err
	}
	rej := rejecter{chunk: chunk, entity: "products"}
	records, problems := chunkRecords(chunk, parseProducts)
	if err := rej.rejectAll(problems); err != nil {
		return importing.Outcome{}, err
	}
	var ids []string
	for _, r := range records {
		if r != nil {
			ids = append(ids, r.ExternalID)
		}
	}
	book := product.NewBook(commands.NewID, chunk.Company.Currency)
	loaded, err := loadProducts(ctx, tx, chunk.Company.ID, ids, book)
	if err != nil {
		return importing.Outcome{}, err
	}
	var streams streamEvents
	for i, r := range records {
		if r == nil {
			continue
		}
		o, err := book.Decide(*r)
		if err != nil {
			if err := rej.reject(i, err); err != nil {
				return importing.Outcome{}, err
			}
			continue
		}
		rej.accept(i, r.Ignored)
		if o.Event == nil {
			continue
		}
		streams.add(product.Stream(chunk.Company.ID, o.ProductID), loaded[o.ProductID], eventstore.NewEvent(product.TypeUpserted, o.Event))
	}
	if len(streams.streams) == 0 {
		return rej.outcome(), nil
	}
	if _, err := h.store.AppendTx(ctx, tx, eventstore.Commit{Metadata: meta, Streams: streams.streams}); err != nil {
		return importing.Outcome{}, fmt.Errorf("imports: import products: %w", err)
	}
	if err := saveProducts(ctx, tx, chunk.Company.ID, book.Touched(loaded)); err != nil {
		return importing.Outcome{}, err
	}
	if err := saveProductKeys(ctx, tx, chunk.Company.ID, book.KeyChanges()); err != nil {
		return importing.Outcome{}, err
	}
	return rej.outcome(), nil
}

// parseProducts returns the company's products parser.
func parseProducts(co company.Company) func([]byte) (product.Record, error) {
	return product.NewParser(co).Parse
}

// Prepare implements Preparer.
func (*ProductImporter) Prepare(co company.Company, records []json.RawMessage) Prepared {
	return parseChunk(records, parseProducts(co))
}
