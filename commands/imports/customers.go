package imports

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/clientele/clientele/domain/company"
	"github.com/clientele/clientele/domain/customer"
	"github.com/clientele/clientele/domain/importing"
	"github.com/clientele/clientele/eventstore"
	"github.com/clientele/clientele/internal/crypto"
)

// CustomerImporter imports customer records: it validates each record
// (customer.Parser), finds or creates its customer in the identity
// registry (customer.Book), and appends the customers' events, their
// personal data sealed with each customer's data key, as one commit per
// chunk. The customers' write-side state, which is the registry too (the
// keys each customer holds, each unique), lives in the table
// customer_states, changed in the chunk's transaction (see
// customer_state.go).
type CustomerImporter struct {
	store TxAppender
	keys  crypto.KeyStore
	now   func() time.Time
}

var _ Resolver = (*CustomerImporter)(nil)

// NewCustomerImporter returns the customers importer. keys holds the
// customers' data keys and hashes their identities; now stamps the
// write-side state.
func NewCustomerImporter(store TxAppender, keys crypto.KeyStore, now func() time.Time) *CustomerImporter {
	if store == nil || keys.Keyring == nil || now == nil {
		panic("imports: NewCustomerImporter: nil dependency")
	}
	return &CustomerImporter{store: store, keys: keys, now: now}
}

// Entity implements Importer.
func (*CustomerImporter) Entity() importing.Entity { return importing.Customers }

// ImportChunk implements Importer: it resolves the chunk (unless it was
// resolved ahead: Chunk.Resolution) and writes it.
func (h *CustomerImporter) ImportChunk(ctx context.Context, tx pgx.Tx, chunk Chunk) (importing.Outcome, error) {
	return writeResolved(ctx, tx, chunk, "customers", h.resolve, h.write)
}

// customersResolved is a chunk of customer records decided and sealed,
// not yet written.
type customersResolved struct {
	links   *customerLinks
	streams []eventstore.StreamAppend
	outcome importing.Outcome
}

// Resolve implements Resolver.
func (h *CustomerImporter) Resolve(ctx context.Context, q Reader, chunk Chunk, prev Resolution) (Resolution, error) {
	p, _ := prev.(*customersResolved)
	return h.resolve(ctx, q, chunk, p)
}

// resolve decides the chunk's records in order against the state as the
// earlier records left it (so two records of one new person create one
// customer), after prev's when it is not nil, and seals their changes. It
// costs a fixed number of round trips whatever the chunk's size: the
// registry and the states are read with one query each, the data keys
// with one.
func (h *CustomerImporter) resolve(ctx context.Context, q Reader, chunk Chunk, prev *customersResolved) (*customersResolved, error) {
	co := chunk.Company
	rej := rejecter{chunk: chunk, entity: "customers"}
	records, problems := chunkRecords(chunk, parseCustomers)
	if err := rej.rejectAll(problems); err != nil {
		return nil, err
	}
	links, err := loadCustomerLinks(ctx, q, h.keys, co.ID, records)
	if err != nil {
		return nil, err
	}
	if prev != nil {
		links.after(prev.links)
	}
	for i, r := range records {
		if r == nil {
			continue
		}
		if (r.Delete || r.Forget) && !chunk.MayDestroy {
			if err := rej.reject(i, destroyProblem(*r)); err != nil {
				return nil, err
			}
			continue
		}
		if _, err := links.decide(*r); err != nil {
			if err := rej.reject(i, err); err != nil {
				return nil, err
			}
			continue
		}
		rej.accept(i, r.Ignored)
	}
	streams, _, err := links.seal(ctx, q)
	if err != nil {
		return nil, err
	}
	return &customersResolved{links: links, streams: streams, outcome: rej.outcome()}, nil
}

// write appends the resolved chunk's events as one commit and writes back
// the write-side state (data keys, registry, states), in tx: a COPY per
// table for new rows and one batch for the rest.
func (h *CustomerImporter) write(ctx context.Context, tx pgx.Tx, meta eventstore.Metadata, r *customersResolved) (importing.Outcome, error) {
	if len(r.streams) > 0 {
		if _, err := h.store.AppendTx(ctx, tx, eventstore.Commit{Metadata: meta, Streams: r.streams}); err != nil {
			return importing.Outcome{}, fmt.Errorf("imports: import customers: %w", err)
		}
	}
	if err := r.links.save(ctx, tx, h.now()); err != nil {
		return importing.Outcome{}, err
	}
	return r.outcome, nil
}

// destroyProblem rejects a customer record that deletes or forgets, sent
// by a principal that may not (Chunk.MayDestroy).
func destroyProblem(r customer.Record) error {
	field := customer.FieldIsDeleted
	if r.Forget {
		field = customer.FieldIsForgotten
	}
	return &customer.Problem{Field: field, Reason: reasonNeedsAdmin}
}

// parseCustomers returns the company's customers parser.
func parseCustomers(co company.Company) func([]byte) (customer.Record, error) {
	return customer.NewParser(co).Parse
}

// Prepare implements Preparer.
func (*CustomerImporter) Prepare(co company.Company, records []json.RawMessage) Prepared {
	return parseChunk(records, parseCustomers(co))
}
