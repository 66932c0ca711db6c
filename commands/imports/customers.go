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

// CustomerStream is a customer's stream.
func CustomerStream(companyID, customerID string) string {
	return "customer-" + companyID + "-" + customerID
}

// CustomerImporter imports customer records: it validates each record
// (customer.Parser), finds or creates its customer in the identity
// registry (customer.Book), and appends the customers' events, their
// personal data sealed with each customer's data key, as one commit per
// chunk. The registry and the customers' write-side state live in the
// tables customer_identities and customer_states, changed in the chunk's
// transaction (see customer_state.go).
type CustomerImporter struct {
	store TxAppender
	keys  crypto.KeyStore
	now   func() time.Time
}

var _ Importer = (*CustomerImporter)(nil)

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

// ImportChunk implements Importer. Records are decided in order against
// the state as the earlier records of the chunk left it, so two records of
// one new person create one customer. The chunk costs a fixed number of
// round trips whatever its size: the registry and the states are read
// with one query each, the data keys with one statement per operation,
// the events with one commit, and the state written back with a COPY per
// table for new rows and one batch for the rest.
func (h *CustomerImporter) ImportChunk(ctx context.Context, tx pgx.Tx, chunk Chunk) (importing.Outcome, error) {
	co := chunk.Company
	meta, err := chunkMetadata(chunk, "customers")
	if err != nil {
		return importing.Outcome{}, err
	}
	rej := rejecter{chunk: chunk, entity: "customers"}
	records, problems := chunkRecords(chunk, parseCustomers)
	if err := rej.rejectAll(problems); err != nil {
		return importing.Outcome{}, err
	}

	links, err := loadCustomerLinks(ctx, tx, h.keys, co.ID, records)
	if err != nil {
		return importing.Outcome{}, err
	}
	for i, r := range records {
		if r == nil {
			continue
		}
		if (r.Delete || r.Forget) && !chunk.MayDestroy {
			if err := rej.reject(i, destroyProblem(*r)); err != nil {
				return importing.Outcome{}, err
			}
			continue
		}
		if _, err := links.decide(*r); err != nil {
			if err := rej.reject(i, err); err != nil {
				return importing.Outcome{}, err
			}
			continue
		}
		rej.accept(i, r.Ignored)
	}
	streams, _, err := links.commit(ctx, tx)
	if err != nil {
		return importing.Outcome{}, err
	}
	if len(streams) > 0 {
		if _, err := h.store.AppendTx(ctx, tx, eventstore.Commit{Metadata: meta, Streams: streams}); err != nil {
			return importing.Outcome{}, fmt.Errorf("imports: import customers: %w", err)
		}
	}
	if err := links.save(ctx, tx, h.now()); err != nil {
		return importing.Outcome{}, err
	}
	return rej.outcome(), nil
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
