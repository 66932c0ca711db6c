package imports

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/clientele/clientele/commands"
	"github.com/clientele/clientele/domain/company"
	"github.com/clientele/clientele/domain/customer"
	"github.com/clientele/clientele/domain/importing"
	"github.com/clientele/clientele/domain/product"
	"github.com/clientele/clientele/domain/sale"
	"github.com/clientele/clientele/eventstore"
	"github.com/clientele/clientele/internal/crypto"
)

// SaleImporter imports sale records (sale.Parser): the records of one
// sale_external_id in a chunk are one transaction (sale.Merge), decided
// against the stored sale (sale.Book: mandatory fields, currency,
// amounts, state); its customer part creates or updates the customer like
// a customer record (customer_link.go), its rows find or create their
// products (product_link.go), and its personal fields are sealed with the
// customer's data key. One commit per chunk. The write-side state of the
// sales is the table sale_states.
type SaleImporter struct {
	store TxAppender
	keys  crypto.KeyStore
	now   func() time.Time
}

var _ Importer = (*SaleImporter)(nil)

// NewSaleImporter returns the sales importer; keys holds the customers'
// data keys, now stamps the customers' write-side state.
func NewSaleImporter(store TxAppender, keys crypto.KeyStore, now func() time.Time) *SaleImporter {
	if store == nil || keys.Keyring == nil || now == nil {
		panic("imports: NewSaleImporter: nil dependency")
	}
	return &SaleImporter{store: store, keys: keys, now: now}
}

// Entity implements Importer.
func (*SaleImporter) Entity() importing.Entity { return importing.Sales }

// pendingSale is a decided transaction waiting for its seal.
type pendingSale struct {
	ext      string
	out      sale.Outcome
	customer string
	rows     []sale.Row
}

// ImportChunk implements Importer.
func (h *SaleImporter) ImportChunk(ctx context.Context, tx pgx.Tx, chunk Chunk) (importing.Outcome, error) {
	co := chunk.Company
	meta, err := chunkMetadata(chunk, "sales")
	if err != nil {
		return importing.Outcome{}, err
	}
	rej := rejecter{chunk: chunk, entity: "sales"}
	records, problems := chunkRecords(chunk, parseSales)
	if err := rej.rejectAll(problems); err != nil {
		return importing.Outcome{}, err
	}
	// The records of one sale, in upload order; the sales in the order
	// first named.
	var order []string
	groups := map[string][]int{}
	for i, r := range records {
		if r == nil {
			continue
		}
		if _, ok := groups[r.ExternalID]; !ok {
			order = append(order, r.ExternalID)
		}
		groups[r.ExternalID] = append(groups[r.ExternalID], i)
	}
	book := sale.NewBook(commands.NewID, co)
	versions, err := loadSales(ctx, tx, co.ID, order, book)
	if err != nil {
		return importing.Outcome{}, err
	}

	// Decide each transaction; its customer part and the rows' products
	// are resolved after, so gather them first to load them in bulk.
	type decided struct {
		ext     string
		idx     []int
		out     sale.Outcome
		rej     []sale.Rejected
		before  sale.State
		existed bool
	}
	var ds []decided
	var customers []*customer.Record
	var refs []product.Ref
	for _, ext := range order {
		idx := groups[ext]
		txRecords := make([]sale.Record, len(idx))
		for j, i := range idx {
			txRecords[j] = *records[i]
		}
		d := decided{ext: ext, idx: idx}
		d.before, d.existed = book.State(ext)
		d.out, d.rej = book.Decide(sale.Merge(txRecords))
		out := d.out
		ds = append(ds, d)
		if out.Customer != nil {
			customers = append(customers, out.Customer)
		}
		for _, r := range out.Rows {
			refs = append(refs, r.Product)
		}
	}
	links, err := loadCustomerLinks(ctx, tx, h.keys, co.ID, customers)
	if err != nil {
		return importing.Outcome{}, err
	}
	products, err := loadProductLinks(ctx, tx, co.ID, co.Currency, refs)
	if err != nil {
		return importing.Outcome{}, err
	}
	// The stored customers of the sales whose records name none: a deleted
	// or forgotten one refuses them too (and a forgotten one has no key to
	// seal with).
	var stored []string
	for _, d := range ds {
		if d.out.SaleID != "" && d.out.Customer == nil && d.out.CustomerID != "" {
			stored = append(stored, d.out.CustomerID)
		}
	}
	refused, err := refusingCustomers(ctx, tx, co.ID, stored)
	if err != nil {
		return importing.Outcome{}, err
	}

	var pending []pendingSale
	for _, d := range ds {
		for _, r := range d.rej {
			if err := rej.reject(d.idx[r.Record], r.Err); err != nil {
				return importing.Outcome{}, err
			}
		}
		out := d.out
		if out.SaleID == "" {
			continue
		}
		customerID := out.CustomerID
		var refusal error
		if out.Customer != nil {
			o, err := links.decide(*out.Customer)
			if err != nil {
				refusal = saleCustomerProblem(err)
			}
			customerID = o.CustomerID
		} else if reason := refused[customerID]; reason != "" {
			refusal = &sale.Problem{Reason: reason}
		}
		if refusal != nil {
			// The customer refuses the sale (deleted, forgotten): so does
			// the sale, as if never decided.
			book.Restore(d.ext, d.before, d.existed)
			for _, a := range out.Accepted {
				if err := rej.reject(d.idx[a], refusal); err != nil {
					return importing.Outcome{}, err
				}
			}
			continue
		}
		book.SetCustomer(out.SaleID, customerID)
		for _, a := range out.Accepted {
			rej.accept(d.idx[a], records[d.idx[a]].Ignored)
		}
		if !out.Changed() {
			continue
		}
		ps := pendingSale{ext: d.ext, out: out, customer: customerID}
		for _, r := range out.Rows {
			po := products.link(r.Product)
			ps.rows = append(ps.rows, sale.Row{Key: r.Key, ProductID: po.ProductID, Fields: withField(r.Fields, sale.RowProductID, po.ExternalID)})
		}
		if len(out.Personal)+len(out.PersonalUnset) > 0 {
			links.sealFor(customerID)
		}
		pending = append(pending, ps)
	}

	customerStreams, keys, err := links.seal(ctx, tx)
	if err != nil {
		return importing.Outcome{}, err
	}
	upserts, errs := make([]eventstore.StreamAppend, len(pending)), make([]error, len(pending))
	inParallel(len(pending), func(i int) {
		upserts[i], errs[i] = saleAppend(co.ID, pending[i], versions, keys)
	})
	if err := errors.Join(errs...); err != nil {
		return importing.Outcome{}, err
	}
	c := eventstore.Commit{Metadata: meta, Streams: append(append(customerStreams, products.created...), upserts...)}
	if len(c.Streams) > 0 {
		if _, err := h.store.AppendTx(ctx, tx, c); err != nil {
			return importing.Outcome{}, fmt.Errorf("imports: import sales: %w", err)
		}
	}
	if err := links.save(ctx, tx, h.now()); err != nil {
		return importing.Outcome{}, err
	}
	if err := products.save(ctx, tx); err != nil {
		return importing.Outcome{}, err
	}
	if err := saveSales(ctx, tx, co.ID, book.Touched()); err != nil {
		return importing.Outcome{}, err
	}
	return rej.outcome(), nil
}

// saleAppend is the SaleUpserted of a decided transaction, its personal
// fields sealed with its customer's data key, at the version the sale's
// stream had before the chunk.
func saleAppend(companyID string, ps pendingSale, versions map[string]int64, keys map[string][]byte) (eventstore.StreamAppend, error) {
	o := ps.out
	data := sale.Upserted{SaleID: o.SaleID, ExternalID: ps.ext, CustomerID: ps.customer, Created: o.Created,
		Set: o.Set, Unset: o.Unset, Rows: ps.rows}
	if len(o.Personal)+len(o.PersonalUnset) > 0 {
		personal := make(map[string]any, len(o.Personal)+len(o.PersonalUnset))
		for k, v := range o.Personal {
			personal[k] = v
		}
		for _, k := range o.PersonalUnset {
			personal[k] = ""
		}
		sealed, err := sealPersonal(keys, ps.customer, personal)
		if err != nil {
			return eventstore.StreamAppend{}, err
		}
		data.Sealed = sealed
	}
	return eventstore.StreamAppend{StreamID: sale.Stream(companyID, o.SaleID), ExpectedVersion: versions[o.SaleID],
		Events: []eventstore.Event{eventstore.NewEvent(sale.TypeUpserted, data)}}, nil
}

// saleCustomerProblem names, in a rejection by the customer registry, the
// sale's field rather than the customer's, and no field when the
// customer's state refuses the sale (deleted, forgotten).
func saleCustomerProblem(err error) error {
	var p *customer.Problem
	if !errors.As(err, &p) {
		return err
	}
	switch p.Field {
	case customer.FieldExternalID:
		return &sale.Problem{Field: sale.FieldCustomerID, Reason: p.Reason}
	case customer.FieldEmail:
		return &sale.Problem{Field: sale.FieldEmail, Reason: p.Reason}
	case customer.FieldPhoneNumber:
		return &sale.Problem{Field: sale.FieldPhoneNumber, Reason: p.Reason}
	}
	return &sale.Problem{Reason: p.Reason}
}

// parseSales returns the company's sales parser.
func parseSales(co company.Company) func([]byte) (sale.Record, error) {
	return sale.NewParser(co).Parse
}

// Prepare implements Preparer.
func (*SaleImporter) Prepare(co company.Company, records []json.RawMessage) Prepared {
	return parseChunk(records, parseSales(co))
}
