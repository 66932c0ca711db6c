package imports

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/clientele/clientele/domain/company"
	"github.com/clientele/clientele/domain/importing"
	"github.com/clientele/clientele/domain/values"
	"github.com/clientele/clientele/eventstore"
)

// upserts describes an entity whose records each upsert one entity by
// its external_id, decided against a registry of the stored ones
// (products: product_states, shops: shop_states), for importUpserts.
type upserts[R any] struct {
	// entity is the plural of the records' metadata and errors
	// ("products").
	entity string
	// parser returns the company's parser of the records.
	parser func(company.Company) func([]byte) (R, error)
	// key returns what importUpserts reads of a record: its external_id
	// and the keys it carried that are no field of the entity.
	key func(R) (externalID string, ignored values.Ignored)
	// book returns the registry of one chunk, empty.
	book func(Chunk) upsertBook[R]
}

// upsertBook is the registry of the entities one chunk upserts, held by
// the entity's domain book.
type upsertBook[R any] interface {
	// load loads the stored entities of the external ids, in one query,
	// and returns their stream versions by entity id.
	load(ctx context.Context, tx pgx.Tx, companyID string, externalIDs []string) (map[string]int64, error)
	// decide decides r against what the records before it left, and
	// returns the entity's id and stream and the record's event, or a nil
	// event when r changes nothing. An error rejects r.
	decide(companyID string, r R) (id, stream string, e *eventstore.Event, err error)
	// save writes the registry rows the chunk changed, versions being
	// load's, once the chunk's commit is appended.
	save(ctx context.Context, tx pgx.Tx, companyID string, versions map[string]int64) error
}

// importUpserts is the ImportChunk of the importers of upserts (products,
// shops): the chunk's records are parsed (those that do not parse are
// rejected), the stored entities they name loaded in one query, each
// record decided in order against the state the records before it left,
// and every change appended as one commit, after which the registry rows
// are saved in one statement. A chunk that changes nothing commits
// nothing.
func importUpserts[R any](ctx context.Context, tx pgx.Tx, store TxAppender, chunk Chunk, u upserts[R]) (importing.Outcome, error) {
	meta, err := chunkMetadata(chunk, u.entity)
	if err != nil {
		return importing.Outcome{}, err
	}
	rej := rejecter{chunk: chunk, entity: u.entity}
	records, problems := chunkRecords(chunk, u.parser)
	if err := rej.rejectAll(problems); err != nil {
		return importing.Outcome{}, err
	}
	var ids []string
	for _, r := range records {
		if r != nil {
			id, _ := u.key(*r)
			ids = append(ids, id)
		}
	}
	book := u.book(chunk)
	loaded, err := book.load(ctx, tx, chunk.Company.ID, ids)
	if err != nil {
		return importing.Outcome{}, err
	}
	var streams streamEvents
	for i, r := range records {
		if r == nil {
			continue
		}
		id, stream, e, err := book.decide(chunk.Company.ID, *r)
		if err != nil {
			if err := rej.reject(i, err); err != nil {
				return importing.Outcome{}, err
			}
			continue
		}
		_, ignored := u.key(*r)
		rej.accept(i, ignored)
		if e == nil {
			continue
		}
		streams.add(stream, loaded[id], *e)
	}
	if len(streams.streams) == 0 {
		return rej.outcome(), nil
	}
	if _, err := store.AppendTx(ctx, tx, eventstore.Commit{Metadata: meta, Streams: streams.streams}); err != nil {
		return importing.Outcome{}, fmt.Errorf("imports: import %s: %w", u.entity, err)
	}
	if err := book.save(ctx, tx, chunk.Company.ID, loaded); err != nil {
		return importing.Outcome{}, err
	}
	return rej.outcome(), nil
}
