package imports

import (
	"context"
	"encoding/json"

	"github.com/jackc/pgx/v5"

	"github.com/clientele/clientele/commands"
	"github.com/clientele/clientele/domain/company"
	"github.com/clientele/clientele/domain/importing"
	"github.com/clientele/clientele/domain/shop"
	"github.com/clientele/clientele/domain/values"
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
// records of one new shop create one shop and the second updates it
// (importUpserts).
func (h *ShopImporter) ImportChunk(ctx context.Context, tx pgx.Tx, chunk Chunk) (importing.Outcome, error) {
	return importUpserts(ctx, tx, h.store, chunk, shopUpserts)
}

// shopUpserts is the shops importer's part of importUpserts.
var shopUpserts = upserts[shop.Record]{
	entity: "shops",
	parser: parseShops,
	key:    func(r shop.Record) (string, values.Ignored) { return r.ExternalID, r.Ignored },
	book:   func(Chunk) upsertBook[shop.Record] { return shopBook{shop.NewBook(commands.NewID)} },
}

// shopBook is a chunk's registry of shops: shop.Book, loaded from and
// saved to shop_states.
type shopBook struct{ *shop.Book }

func (b shopBook) load(ctx context.Context, tx pgx.Tx, companyID string, externalIDs []string) (map[string]int64, error) {
	return loadShops(ctx, tx, companyID, externalIDs, b.Book)
}

func (b shopBook) decide(companyID string, r shop.Record) (id, stream string, e *eventstore.Event, err error) {
	o := b.Decide(r)
	if o.Event == nil {
		return o.ShopID, "", nil, nil
	}
	ev := eventstore.NewEvent(shop.TypeUpserted, o.Event)
	return o.ShopID, shop.Stream(companyID, o.ShopID), &ev, nil
}

func (b shopBook) save(ctx context.Context, tx pgx.Tx, companyID string, versions map[string]int64) error {
	return saveShops(ctx, tx, companyID, b.Touched(versions))
}

// parseShops returns the company's shops parser.
func parseShops(co company.Company) func([]byte) (shop.Record, error) {
	return shop.NewParser(co).Parse
}

// Prepare implements Preparer.
func (*ShopImporter) Prepare(co company.Company, records []json.RawMessage) Prepared {
	return parseChunk(records, parseShops(co))
}
