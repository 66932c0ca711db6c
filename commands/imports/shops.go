package imports

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/clientele/clientele/commands"
	"github.com/clientele/clientele/domain/company"
	"github.com/clientele/clientele/domain/importing"
	"github.com/clientele/clientele/domain/shop"
	"github.com/clientele/clientele/eventstore"
)

// ShopImporter imports shop records: upsert by external_id, one
// ShopUpserted per record that changes something, one commit per chunk.
// The registry of shops (external_id to shop id and stream version) is
// the table shop_states, read with one query and written with one
// statement per chunk (shop_state.go).
type ShopImporter struct {
	store TxAppender
}

var _ Importer = (*ShopImporter)(nil)

// NewShopImporter returns the shops importer.
func NewShopImporter(store TxAppender) *ShopImporter {
	if store == nil {
		panic("imports: NewShopImporter: nil store")
	}
	return &ShopImporter{store: store}
}

// Entity implements Importer.
func (*ShopImporter) Entity() importing.Entity { return importing.Shops }

// ImportChunk implements Importer. Records are decided in order, so two
// records of one new shop create one shop and the second updates it.
func (h *ShopImporter) ImportChunk(ctx context.Context, tx pgx.Tx, chunk Chunk) (importing.Outcome, error) {
	meta, err := chunkMetadata(chunk, "shops")
	if err != nil {
		return importing.Outcome{}, err
	}
	rej := rejecter{chunk: chunk, entity: "shops"}
	records, problems := chunkRecords(chunk, parseShops)
	if err := rej.rejectAll(problems); err != nil {
		return importing.Outcome{}, err
	}
	var ids []string
	for _, r := range records {
		if r != nil {
			ids = append(ids, r.ExternalID)
		}
	}
	book := shop.NewBook(commands.NewID)
	loaded, err := loadShops(ctx, tx, chunk.Company.ID, ids, book)
	if err != nil {
		return importing.Outcome{}, err
	}
	var streams streamEvents
	for i, r := range records {
		if r == nil {
			continue
		}
		rej.accept(i, r.Ignored)
		o := book.Decide(*r)
		if o.Event == nil {
			continue
		}
		streams.add(shop.Stream(chunk.Company.ID, o.ShopID), loaded[o.ShopID], eventstore.NewEvent(shop.TypeUpserted, o.Event))
	}
	if len(streams.streams) == 0 {
		return rej.outcome(), nil
	}
	if _, err := h.store.AppendTx(ctx, tx, eventstore.Commit{Metadata: meta, Streams: streams.streams}); err != nil {
		return importing.Outcome{}, fmt.Errorf("imports: import shops: %w", err)
	}
	if err := saveShops(ctx, tx, chunk.Company.ID, book.Touched(loaded)); err != nil {
		return importing.Outcome{}, err
	}
	return rej.outcome(), nil
}

// parseShops returns the company's shops parser.
func parseShops(co company.Company) func([]byte) (shop.Record, error) {
	return shop.NewParser(co).Parse
}

// Prepare implements Preparer.
func (*ShopImporter) Prepare(co company.Company, records []json.RawMessage) Prepared {
	return parseChunk(records, parseShops(co))
}
