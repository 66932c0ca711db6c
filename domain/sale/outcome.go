package sale

import (
	"slices"

	"github.com/clientele/clientele/domain/customer"
	"github.com/clientele/clientele/domain/product"
)

// RowOutcome is one row of a decided transaction.
type RowOutcome struct {
	// Key identifies the row within its sale (Row.Key).
	Key string
	// Product names the row's product; its Details are what a product
	// created for the row gets, the unit price (in the company's currency)
	// as its price. The importer resolves it, and fills Row.ProductID and
	// Fields["product_id"] (the product's external_id).
	Product product.Ref
	// Fields are the row's fields in the retrieval form (Row.Fields).
	Fields map[string]any
}

// Outcome is what the accepted records of a transaction do to their sale.
type Outcome struct {
	// SaleID is the sale's id, "" when every record was rejected.
	SaleID  string
	Created bool
	// CustomerID is the stored customer of an existing sale, "" for a new
	// sale (the importer resolves Customer and calls Book.SetCustomer).
	CustomerID string
	// Customer is the customer part the records give (sale_customer_id,
	// sale_email, sale_first_name, ... in the customer's names), Embedded;
	// nil when they give no customer field.
	Customer *customer.Record
	// Set and Unset are the transaction fields that change, but the
	// Personal ones (Upserted.Set, Upserted.Unset); Unset is sorted.
	Set   map[string]any
	Unset []string
	// Personal and PersonalUnset are the Personal fields that change, for
	// the importer to seal (Upserted.Sealed, "" for a removed one).
	Personal      map[string]any
	PersonalUnset []string
	// Rows are the rows given, in upload order, one per key (a later row
	// of the same key replaces an earlier one in its place).
	Rows []RowOutcome
	// Accepted are the indexes of the accepted records, in order.
	Accepted []int
}

// Changed reports whether o changes the sale: whether it is an Upserted
// to append.
func (o Outcome) Changed() bool { return o.SaleID != "" && o.changes() }

func (o Outcome) changes() bool {
	return len(o.Set)+len(o.Unset)+len(o.Personal)+len(o.PersonalUnset)+len(o.Rows) > 0
}

// Rejected is a record of a transaction that was rejected: its index in
// the records given to Merge, and why (a *Problem).
type Rejected struct {
	Record int
	Err    error
}

// personal is Personal as a set.
var personal = func() map[string]bool {
	m := map[string]bool{}
	for _, f := range Personal {
		m[f] = true
	}
	return m
}()

// outcome builds the outcome of the decided transaction and updates the
// book.
func (d *decision) outcome() Outcome {
	s := d.s
	o := Outcome{Created: s == nil, Customer: d.customer, Set: map[string]any{}, Personal: map[string]any{},
		Rows: d.out, Accepted: slices.Clone(d.accepted)}
	if s != nil {
		o.CustomerID = s.CustomerID
	}
	for f, v := range d.tx {
		switch {
		case personal[f] && v == "":
			o.PersonalUnset = append(o.PersonalUnset, f)
		case personal[f]:
			o.Personal[f] = v
		case v == "" && slices.Contains(customer.Permissions, customerFields[f]):
			// As a customer's permission, sale_customer_can_email and
			// sale_customer_can_sms sent as "" are false on the sale.
			o.Set[f] = false
		case v == "":
			o.Unset = append(o.Unset, f)
		default:
			o.Set[f] = v
		}
	}
	if s == nil {
		if _, ok := o.Set[FieldState]; !ok {
			o.Set[FieldState] = DefaultState
		}
		o.Set[FieldCurrency] = d.currency
	}
	switch {
	case d.rate != nil && (s == nil || s.Rate != d.rateText || d.currency0() != d.currency):
		o.Set[FieldExchangeRate] = d.rateText
	case d.rate == nil && s != nil && s.Rate != "":
		o.Unset = append(o.Unset, FieldExchangeRate)
	}
	slices.Sort(o.Unset)
	slices.Sort(o.PersonalUnset)
	if !o.changes() && s != nil {
		o.SaleID = s.ID
		return o
	}
	if s == nil {
		s = &State{ID: d.newID(), ExternalID: d.t.ExternalID}
		d.sales[s.ExternalID] = s
	}
	o.SaleID = s.ID
	s.Version++
	s.Currency, s.Rate, s.HasTotal = d.currency, d.rateText, d.hasTotal
	// A new map: a State copied before (Book.State, for Book.Restore)
	// keeps the old one.
	s.Totals, s.Discount = d.totals, d.discount
	if st, ok := o.Set[FieldState].(string); ok {
		s.SaleState = st
	}
	d.touch(s)
	return o
}
