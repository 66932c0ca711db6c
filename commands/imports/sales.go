package imports

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
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

var _ Resolver = (*SaleImporter)(nil)

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

// ImportChunk implements Importer: it resolves the chunk (unless it was
// resolved ahead: Chunk.Resolution) and writes it.
func (h *SaleImporter) ImportChunk(ctx context.Context, tx pgx.Tx, chunk Chunk) (importing.Outcome, error) {
	return writeResolved(ctx, tx, chunk, "sales", h.resolve, h.write)
}

// salesResolved is a chunk of sale records decided and sealed, not yet
// written.
type salesResolved struct {
	companyID string
	book      *sale.Book
	// versions are the sales' stream versions before the chunk.
	versions map[string]int64
	links    *customerLinks
	products *productLinks
	streams  []eventstore.StreamAppend
	outcome  importing.Outcome
}

// Resolve implements Resolver.
func (h *SaleImporter) Resolve(ctx context.Context, q Reader, chunk Chunk, prev Resolution) (Resolution, error) {
	p, _ := prev.(*salesResolved)
	return h.resolve(ctx, q, chunk, p)
}

// decidedSale is a transaction (the records of one sale) decided, its
// customer and products not yet.
type decidedSale struct {
	ext     string
	idx     []int
	out     sale.Outcome
	rej     []sale.Rejected
	before  sale.State
	existed bool
}

// resolve decides the chunk's transactions in order, after prev's
// decisions when prev is not nil: each sale against its stored state,
// then its customer part and its rows' products, and seals them.
func (h *SaleImporter) resolve(ctx context.Context, q Reader, chunk Chunk, prev *salesResolved) (*salesResolved, error) {
	co := chunk.Company
	rej := rejecter{chunk: chunk, entity: "sales"}
	records, problems := chunkRecords(chunk, parseSales)
	if err := rej.rejectAll(problems); err != nil {
		return nil, err
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
	r := &salesResolved{companyID: co.ID, book: sale.NewBook(commands.NewID, co)}
	var err error
	if r.versions, err = loadSales(ctx, q, co.ID, order, r.book); err != nil {
		return nil, err
	}
	if prev != nil {
		for _, s := range prev.book.Touched() {
			r.book.Load(s)
			r.versions[s.ID] = s.Version
		}
	}

	// Decide each transaction; its customer part and the rows' products
	// are resolved after, so gather them first to load them in bulk.
	var ds []decidedSale
	var customers []*customer.Record
	var refs []product.Ref
	for _, ext := range order {
		idx := groups[ext]
		txRecords := make([]sale.Record, len(idx))
		for j, i := range idx {
			txRecords[j] = *records[i]
		}
		d := decidedSale{ext: ext, idx: idx}
		d.before, d.existed = r.book.State(ext)
		d.out, d.rej = r.book.Decide(sale.Merge(txRecords))
		ds = append(ds, d)
		if d.out.Customer != nil {
			customers = append(customers, d.out.Customer)
		}
		for _, row := range d.out.Rows {
			refs = append(refs, row.Product)
		}
	}
	if r.links, err = loadCustomerLinks(ctx, q, h.keys, co.ID, customers); err != nil {
		return nil, err
	}
	if r.products, err = loadProductLinks(ctx, q, co.ID, co.Currency, refs); err != nil {
		return nil, err
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
	refused, err := refusingCustomers(ctx, q, co.ID, stored)
	if err != nil {
		return nil, err
	}
	if prev != nil {
		r.links.after(prev.links)
		r.products.after(prev.products)
		refusedAfter(refused, prev.links)
	}
	pending, err := r.decide(ds, records, refused, &rej)
	if err != nil {
		return nil, err
	}
	if err := r.seal(ctx, q, pending); err != nil {
		return nil, err
	}
	r.outcome = rej.outcome()
	return r, nil
}

// refusedAfter adds to refused the customers that prev deleted or forgot
// (both for good: nothing takes a customer out of refused).
func refusedAfter(refused map[string]string, prev *customerLinks) {
	for _, s := range prev.book.Touched() {
		switch {
		case s.Forgotten:
			refused[s.ID] = customer.ReasonForgotten
		case s.Deleted:
			refused[s.ID] = customer.ReasonDeleted
		}
	}
}

// decide decides each decided transaction's customer and products; a
// customer that refuses the sale (deleted, forgotten) rejects it, as if
// never decided.
func (r *salesResolved) decide(ds []decidedSale, records []*sale.Record, refused map[string]string, rej *rejecter) ([]pendingSale, error) {
	var pending []pendingSale
	for _, d := range ds {
		for _, rj := range d.rej {
			if err := rej.reject(d.idx[rj.Record], rj.Err); err != nil {
				return nil, err
			}
		}
		out := d.out
		if out.SaleID == "" {
			continue
		}
		customerID := out.CustomerID
		var refusal error
		if out.Customer != nil {
			o, err := r.links.decide(*out.Customer)
			if err != nil {
				refusal = saleCustomerProblem(err)
			}
			customerID = o.CustomerID
		} else if reason := refused[customerID]; reason != "" {
			refusal = &sale.Problem{Reason: reason}
		}
		if refusal != nil {
			r.book.Restore(d.ext, d.before, d.existed)
			for _, a := range out.Accepted {
				if err := rej.reject(d.idx[a], refusal); err != nil {
					return nil, err
				}
			}
			continue
		}
		r.book.SetCustomer(out.SaleID, customerID)
		for _, a := range out.Accepted {
			rej.accept(d.idx[a], records[d.idx[a]].Ignored)
		}
		if !out.Changed() {
			continue
		}
		ps := pendingSale{ext: d.ext, out: out, customer: customerID}
		for _, row := range out.Rows {
			po := r.products.link(row.Product)
			ps.rows = append(ps.rows, sale.Row{Key: row.Key, ProductID: po.ProductID, Fields: withField(maps.Clone(row.Fields), sale.RowProductID, po.ExternalID)})
		}
		if len(out.Personal)+len(out.PersonalUnset) > 0 {
			r.links.sealFor(customerID)
		}
		pending = append(pending, ps)
	}
	return pending, nil
}

// seal seals the customers' changes and the sales' personal fields, and
// lays out the chunk's streams: the customers', the products created and
// the sales'.
func (r *salesResolved) seal(ctx context.Context, q Reader, pending []pendingSale) error {
	customerStreams, keys, err := r.links.seal(ctx, q)
	if err != nil {
		return err
	}
	upserts, errs := make([]eventstore.StreamAppend, len(pending)), make([]error, len(pending))
	inParallel(len(pending), func(i int) {
		upserts[i], errs[i] = saleAppend(r.companyID, pending[i], r.versions, keys)
	})
	if err := errors.Join(errs...); err != nil {
		return err
	}
	r.streams = append(append(customerStreams, r.products.created...), upserts...)
	return nil
}

// write appends the resolved chunk's events as one commit and writes back
// the write-side state, in tx.
func (h *SaleImporter) write(ctx context.Context, tx pgx.Tx, meta eventstore.Metadata, r *salesResolved) (importing.Outcome, error) {
	if len(r.streams) > 0 {
		if _, err := h.store.AppendTx(ctx, tx, eventstore.Commit{Metadata: meta, Streams: r.streams}); err != nil {
			return importing.Outcome{}, fmt.Errorf("imports: import sales: %w", err)
		}
	}
	if err := r.links.save(ctx, tx, h.now()); err != nil {
		return importing.Outcome{}, err
	}
	if err := r.products.save(ctx, tx); err != nil {
		return importing.Outcome{}, err
	}
	if err := saveSales(ctx, tx, r.companyID, r.book.Touched()); err != nil {
		return importing.Outcome{}, err
	}
	return r.outcome, nil
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
