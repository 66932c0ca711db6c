package retrieval

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/tidwall/gjson"

	"github.com/clientele/clientele/domain/customer"
	"github.com/clientele/clientele/eventstore"
	"github.com/clientele/clientele/internal/crypto"
	"github.com/clientele/clientele/projections/internal/document"
)

// Customers keeps the customers table: each customer as retrieval shows
// it. It is async: an import of a million customers must not wait for it.
//
// Personal data reaches it only sealed (customer.Upserted.Sealed), so it
// opens every upsert with the customer's data key. A customer whose key is
// gone has been forgotten, whether or not the CustomerForgotten event was
// applied yet (a rebuild replays the upserts first): its row then keeps no
// personal data, and nothing brings it back.
type Customers struct {
	keys crypto.KeyStore
}

// NewCustomers returns the projector; keys opens the sealed changes.
func NewCustomers(keys crypto.KeyStore) *Customers {
	if keys.Keyring == nil {
		panic("projections: NewCustomers: KeyStore without a keyring")
	}
	return &Customers{keys: keys}
}

// Name implements Projector.
func (*Customers) Name() string { return "customers" }

// Tables implements Projector.
func (*Customers) Tables() []string { return []string{"customers"} }

// Apply implements Projector in three round trips whatever the number of
// events: the customers' current rows, their data keys (one query per
// company; a live commit has one company), and one upsert of every row.
func (p *Customers) Apply(ctx context.Context, tx pgx.Tx, events []eventstore.RecordedEvent) error {
	evs, order, byCompany, err := decodeCustomerEvents(events)
	if err != nil || len(order) == 0 {
		return err
	}
	rows, err := loadCustomerRows(ctx, tx, order)
	if err != nil {
		return err
	}
	if err := p.applyCustomerEvents(ctx, tx, rows, evs, byCompany); err != nil {
		return err
	}
	out := make([]*document.CustomerRow, 0, len(order))
	for _, k := range order {
		if r := rows[k]; r.Changed {
			out = append(out, r)
		}
	}
	return writeCustomerRows(ctx, tx, out)
}

// Fold returns the document the customers table would hold for one
// customer after events, the events of the customer's stream from its
// first, in version order, folded by the code Apply folds them with: the
// customer as retrieval shows it, the fields in no particular order. It
// is nil when events make no customer. q reads the customer's data key:
// a customer forgotten since is forgotten in the document, whatever the
// events say, since its key is gone.
func (p *Customers) Fold(ctx context.Context, q crypto.Reader, events []eventstore.RecordedEvent) (json.RawMessage, error) {
	evs, order, byCompany, err := decodeCustomerEvents(events)
	if err != nil || len(order) == 0 {
		return nil, err
	}
	if len(order) > 1 {
		return nil, fmt.Errorf("projections: customers: fold: events of %d customers, not one", len(order))
	}
	rows := map[document.CustomerKey]*document.CustomerRow{}
	if err := p.applyCustomerEvents(ctx, q, rows, evs, byCompany); err != nil {
		return nil, err
	}
	return rows[order[0]].AppendDoc(nil, map[string]json.RawMessage{}), nil
}

// decodeCustomerEvents decodes the customer events among events: each
// with its data, the customers in the order of their first events, and
// their ids by company.
func decodeCustomerEvents(events []eventstore.RecordedEvent) ([]document.CustomerEvent, []document.CustomerKey, map[string][]string, error) {
	evs := make([]document.CustomerEvent, 0, len(events))
	var order []document.CustomerKey
	seen := make(map[document.CustomerKey]bool, len(events))
	byCompany := map[string][]string{}
	for i, e := range events {
		if e.Type != customer.TypeUpserted && e.Type != customer.TypeDeleted && e.Type != customer.TypeForgotten {
			continue
		}
		ce := document.CustomerEvent{RecordedEvent: &events[i]}
		// Deleted and Forgotten are Upserted's first field alone.
		if err := document.DecodeCustomerEvent(e.Data, &ce.Data); err != nil {
			return nil, nil, nil, fmt.Errorf("projections: decode %s %s/%d: %w", e.Type, e.StreamID, e.StreamVersion, err)
		}
		ce.Key = document.CustomerKey{Company: e.Metadata.CompanyID, ID: ce.Data.CustomerID}
		evs = append(evs, ce)
		if !seen[ce.Key] {
			seen[ce.Key] = true
			order = append(order, ce.Key)
			// Nearly every event is an upsert: loading the keys of all the
			// customers costs less than sorting out which need one.
			byCompany[ce.Key.Company] = append(byCompany[ce.Key.Company], ce.Key.ID)
		}
	}
	return evs, order, byCompany, nil
}

// applyCustomerEvents folds evs into rows, the customers' current rows
// (a customer without one starts from none), with their data keys (one
// query per company; a live commit has one company).
func (p *Customers) applyCustomerEvents(ctx context.Context, q crypto.Reader, rows map[document.CustomerKey]*document.CustomerRow,
	evs []document.CustomerEvent, byCompany map[string][]string) error {
	keys, err := document.LoadCustomerKeys(ctx, q, p.keys, byCompany)
	if err != nil {
		return fmt.Errorf("projections: customers: %w", err)
	}
	dec := document.NewCustomerDecoder()
	for _, ce := range evs {
		r := rows[ce.Key]
		if r == nil {
			r = document.NewCustomerRow(ce.Key, ce.RecordedAt)
			rows[ce.Key] = r
		}
		if err := r.ApplyEvent(ce, keys, dec); err != nil {
			return err
		}
	}
	return nil
}

// ForgetTypes implements projections.Forgetter: forgetting a customer
// (CustomerForgotten) is applied ahead of the commits held before it.
func (*Customers) ForgetTypes() []string { return []string{customer.TypeForgotten} }

// Forget implements projections.Forgetter: the rows of the customers forgotten in
// events lose the person's data at once, ahead of the held commits
// before the forgetting. The rows keep their version: those commits,
// applied later, advance it as usual over a row that is forgotten already,
// which records nothing from them (and so a commit held because it could
// not be stored goes in once the customer is forgotten), and the
// forgetting applied again in its place changes nothing more. A customer
// without a row has nothing in retrieval to forget.
func (p *Customers) Forget(ctx context.Context, tx pgx.Tx, events []eventstore.RecordedEvent) error {
	at := map[document.CustomerKey]time.Time{}
	var order []document.CustomerKey
	for _, e := range events {
		if e.Type != customer.TypeForgotten {
			continue
		}
		var d document.CustomerEventData
		if err := document.DecodeCustomerEvent(e.Data, &d); err != nil {
			return fmt.Errorf("projections: decode %s %s/%d: %w", e.Type, e.StreamID, e.StreamVersion, err)
		}
		k := document.CustomerKey{Company: e.Metadata.CompanyID, ID: d.CustomerID}
		if _, ok := at[k]; !ok {
			order = append(order, k)
		}
		at[k] = e.RecordedAt.UTC()
	}
	if len(order) == 0 {
		return nil
	}
	rows, err := loadCustomerRows(ctx, tx, order)
	if err != nil {
		return err
	}
	var out []*document.CustomerRow
	for _, k := range order {
		if r := rows[k]; r != nil && !r.IsForgotten {
			r.Forget()
			r.UpdatedAt = at[k]
			out = append(out, r)
		}
	}
	if len(out) == 0 {
		return nil
	}
	return writeCustomerRows(ctx, tx, out)
}

// writeCustomerRows upserts the rows in one statement. Columns travel as
// arrays, so each doc is parsed once, as the jsonb it becomes.
func writeCustomerRows(ctx context.Context, tx pgx.Tx, out []*document.CustomerRow) error {
	n := len(out)
	companies, ids, docs := make([]string, n), make([]string, n), make([][]byte, n)
	deleted, forgotten := make([]bool, n), make([]bool, n)
	versions, created, updated := make([]int64, n), make([]time.Time, n), make([]time.Time, n)
	// Every doc in one buffer, sliced once it stops growing.
	var buf []byte
	ends := make([]int, n)
	keys := map[string]json.RawMessage{}
	for i, r := range out {
		buf = r.AppendDoc(buf, keys)
		if i == 0 { // the rows of a commit are much alike
			buf = slices.Grow(buf, len(buf)*(n-1)*5/4)
		}
		ends[i] = len(buf)
		companies[i], ids[i] = r.CompanyID, r.CustomerID
		deleted[i], forgotten[i], versions[i], created[i], updated[i] = r.IsDeleted, r.IsForgotten, r.Version, r.CreatedAt, r.UpdatedAt
	}
	start := 0
	for i, end := range ends {
		docs[i] = buf[start:end:end]
		start = end
	}
	_, err := tx.Exec(ctx, `
		INSERT INTO customers (company_id, customer_id, doc, is_deleted, is_forgotten, version, created_at, updated_at)
		SELECT * FROM unnest($1::text[], $2::text[], $3::jsonb[], $4::boolean[], $5::boolean[], $6::bigint[], $7::timestamptz[], $8::timestamptz[])
		ON CONFLICT (company_id, customer_id) DO UPDATE SET doc = EXCLUDED.doc, is_deleted = EXCLUDED.is_deleted,
			is_forgotten = EXCLUDED.is_forgotten, version = EXCLUDED.version, updated_at = EXCLUDED.updated_at`,
		companies, ids, docs, deleted, forgotten, versions, created, updated)
	if err != nil {
		return fmt.Errorf("projections: customers: write: %w", err)
	}
	return nil
}

// loadCustomerRows reads the rows of the given customers, in one query.
func loadCustomerRows(ctx context.Context, tx pgx.Tx, keys []document.CustomerKey) (map[document.CustomerKey]*document.CustomerRow, error) {
	companies, ids := make([]string, len(keys)), make([]string, len(keys))
	for i, k := range keys {
		companies[i], ids[i] = k.Company, k.ID
	}
	rows, err := tx.Query(ctx, `SELECT c.company_id, c.customer_id, c.doc, c.is_deleted, c.is_forgotten, c.version, c.created_at
		FROM customers c JOIN unnest($1::text[], $2::text[]) AS k(company_id, customer_id) USING (company_id, customer_id)`,
		companies, ids)
	if err != nil {
		return nil, fmt.Errorf("projections: customers: load: %w", err)
	}
	out := make(map[document.CustomerKey]*document.CustomerRow, len(keys))
	var doc []byte
	var created time.Time
	r := &document.CustomerRow{}
	_, err = pgx.ForEachRow(rows, []any{&r.CompanyID, &r.CustomerID, &doc, &r.IsDeleted, &r.IsForgotten, &r.Version, &created}, func() error {
		row := *r
		row.CreatedAt = created.UTC()
		// jsonb prints valid JSON: its values can be kept as they are,
		// slices of doc (a copy of its own).
		row.Fields = make(map[string]json.RawMessage, 24)
		gjson.ParseBytes(doc).ForEach(func(k, v gjson.Result) bool {
			if name := document.StringOf(k); !slices.Contains(document.OwnedCustomerFields, name) { // the columns say
				row.Fields[name] = document.RawOf(doc, v)
			}
			return true
		})
		out[document.CustomerKey{Company: row.CompanyID, ID: row.CustomerID}] = &row
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("projections: customers: load: %w", err)
	}
	return out, nil
}
