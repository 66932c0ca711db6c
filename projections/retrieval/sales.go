package retrieval

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/clientele/clientele/domain/customer"
	"github.com/clientele/clientele/domain/sale"
	"github.com/clientele/clientele/eventstore"
	"github.com/clientele/clientele/internal/crypto"
	"github.com/clientele/clientele/projections/internal/bulk"
	"github.com/clientele/clientele/projections/internal/document"
)

// Sales keeps the sales table: each transaction as retrieval shows it
// (document/sales.go), with the columns statistics need (state, counted,
// revenue, sale_date). It is async, like every entity an import fills.
//
// The transaction's personal fields (sale.Personal) reach it only sealed
// with the customer's data key. Forgetting the customer removes them from
// every sale of the customer, when CustomerForgotten is applied or as soon
// as an event shows the key gone (as in a rebuild).
type Sales struct {
	keys crypto.KeyStore
}

// NewSales returns the projector; keys opens the sealed personal fields.
func NewSales(keys crypto.KeyStore) *Sales {
	if keys.Keyring == nil {
		panic("projections: NewSales: KeyStore without a keyring")
	}
	return &Sales{keys: keys}
}

// Name implements Projector.
func (*Sales) Name() string { return "sales" }

// Tables implements Projector.
func (*Sales) Tables() []string { return []string{"sales"} }

// EventTypes implements TypeFilter.
func (*Sales) EventTypes() []string { return []string{sale.TypeUpserted, customer.TypeForgotten} }

// ForgetTypes implements projections.Forgetter: forgetting a customer
// (CustomerForgotten) is applied ahead of the commits held before it.
func (*Sales) ForgetTypes() []string { return []string{customer.TypeForgotten} }

// Forget implements projections.Forgetter: applying a forgetting removes the
// customer's personal fields from all of the customer's sales there are,
// whenever it comes, and the held sales recorded before it open to
// nothing once applied, the key being gone.
func (p *Sales) Forget(ctx context.Context, tx pgx.Tx, events []eventstore.RecordedEvent) error {
	return p.Apply(ctx, tx, events)
}

// Apply implements Projector in three round trips whatever the number of
// events (plus one per further company): the sales' current rows, the data
// keys of their customers, and one batch that upserts the changed rows and
// removes the personal fields of forgotten customers.
func (p *Sales) Apply(ctx context.Context, tx pgx.Tx, events []eventstore.RecordedEvent) error {
	type saleChange struct {
		e      *eventstore.RecordedEvent
		data   sale.Upserted
		key    document.CatalogKey
		forgot document.CustomerKey
	}
	var changes []saleChange
	var order []document.CatalogKey
	first := map[document.CatalogKey]time.Time{}
	needKeys := map[document.CustomerKey]bool{}
	byCompany := map[string][]string{}
	for i, e := range events {
		c := saleChange{e: &events[i]}
		company := e.Metadata.CompanyID
		switch e.Type {
		case sale.TypeUpserted:
			if err := document.DecodeNumbersEvent(e, &c.data); err != nil {
				return err
			}
			c.key = document.CatalogKey{Company: company, ID: c.data.SaleID}
			if _, ok := first[c.key]; !ok {
				first[c.key] = e.RecordedAt
				order = append(order, c.key)
			}
			if ck := (document.CustomerKey{Company: company, ID: c.data.CustomerID}); len(c.data.Sealed) > 0 && !needKeys[ck] {
				needKeys[ck] = true
				byCompany[company] = append(byCompany[company], ck.ID)
			}
		case customer.TypeForgotten:
			var f customer.Forgotten
			if err := bulk.Decode(e, &f); err != nil {
				return err
			}
			c.forgot = document.CustomerKey{Company: company, ID: f.CustomerID}
		default:
			continue
		}
		changes = append(changes, c)
	}
	if len(changes) == 0 {
		return nil
	}
	rows, err := document.LoadSaleRows(ctx, tx, document.SalesTable, order, first)
	if err != nil {
		return err
	}
	keys, err := document.LoadCustomerKeys(ctx, tx, p.keys, byCompany)
	if err != nil {
		return fmt.Errorf("projections: sales: %w", err)
	}
	gone := map[document.CustomerKey]bool{}
	for _, c := range changes {
		if c.e.Type == customer.TypeForgotten {
			gone[c.forgot] = true
			continue
		}
		r := rows[c.key]
		if !r.Advance(c.e) {
			continue
		}
		forgotten, err := r.ApplyUpsert(c.e, c.data, keys)
		if err != nil {
			return err
		}
		if forgotten {
			gone[document.CustomerKey{Company: r.CompanyID, ID: r.CustomerID}] = true
		}
	}
	var out []*document.SaleRow
	for _, k := range order {
		if r := rows[k]; r.Changed {
			// Dropped before the write too: no row version holds them.
			if gone[document.CustomerKey{Company: r.CompanyID, ID: r.CustomerID}] {
				document.DropFields(r.Doc, sale.Personal)
			}
			out = append(out, r)
		}
	}
	var b pgx.Batch
	if err := queueSaleRows(&b, out); err != nil {
		return err
	}
	document.QueueForget(&b, "sales", gone, sale.Personal)
	if b.Len() == 0 {
		return nil
	}
	return bulk.SendBatch(ctx, tx, "sales", &b)
}

// queueSaleRows queues the upsert of the rows, one statement.
func queueSaleRows(b *pgx.Batch, out []*document.SaleRow) error {
	if len(out) == 0 {
		return nil
	}
	n := len(out)
	companies, ids, customers, docs, keyed := make([]string, n), make([]string, n), make([]string, n), make([][]byte, n), make([][]byte, n)
	given, deleted, counted := make([]bool, n), make([]bool, n), make([]bool, n)
	states, revenues, dates := make([]string, n), make([]int64, n), make([]pgtype.Timestamptz, n)
	versions, created, updated := make([]int64, n), make([]time.Time, n), make([]time.Time, n)
	for i, r := range out {
		doc, err := json.Marshal(r.Doc)
		if err != nil {
			return fmt.Errorf("projections: sales: encode %s: %w", r.SaleID, err)
		}
		rs, err := json.Marshal(bulk.OrNone(r.Rows))
		if err != nil {
			return fmt.Errorf("projections: sales: encode rows of %s: %w", r.SaleID, err)
		}
		companies[i], ids[i], customers[i], docs[i], keyed[i] = r.CompanyID, r.SaleID, r.CustomerID, doc, rs
		given[i], deleted[i], counted[i], states[i] = r.TotalGiven, r.Deleted(), r.Counted(), r.State()
		if counted[i] {
			revenues[i], _ = document.Money(r.Doc[document.SaleFieldTotal])
		}
		if t, ok := r.Date(); ok {
			dates[i] = pgtype.Timestamptz{Time: t, Valid: true}
		}
		versions[i], created[i], updated[i] = r.Version, r.CreatedAt, r.UpdatedAt
	}
	b.Queue(`
		INSERT INTO sales (company_id, sale_id, customer_id, doc, keyed_rows, total_given, is_deleted, state, counted, revenue,
			sale_date, version, created_at, updated_at)
		SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::jsonb[], $5::jsonb[], $6::boolean[], $7::boolean[], $8::text[],
			$9::boolean[], $10::bigint[], $11::timestamptz[], $12::bigint[], $13::timestamptz[], $14::timestamptz[])
		ON CONFLICT (company_id, sale_id) DO UPDATE SET customer_id = EXCLUDED.customer_id, doc = EXCLUDED.doc,
			keyed_rows = EXCLUDED.keyed_rows, total_given = EXCLUDED.total_given, is_deleted = EXCLUDED.is_deleted,
			state = EXCLUDED.state, counted = EXCLUDED.counted, revenue = EXCLUDED.revenue, sale_date = EXCLUDED.sale_date,
			version = EXCLUDED.version, updated_at = EXCLUDED.updated_at`,
		companies, ids, customers, docs, keyed, given, deleted, states, counted, revenues, dates, versions, created, updated)
	return nil
}
