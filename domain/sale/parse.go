package sale

import (
	"errors"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/clientele/clientele/domain/company"
	"github.com/clientele/clientele/domain/customer"
	"github.com/clientele/clientele/domain/product"
	"github.com/clientele/clientele/domain/values"
)

// Problem is why a record is rejected: the field at fault, when one is
// (a row field of sale_rows as "sale_rows.<i>.<field>"), and a reason
// that never quotes the value, since rejections are stored and the value
// may be personal data.
type Problem = values.Problem

// Record is one import record, validated and normalised: a flat row (with
// transaction fields or without), or a transaction with sale_rows.
type Record struct {
	// ExternalID is sale_external_id, which every record carries.
	ExternalID string
	// Tx are the transaction-level fields the record gives, in their
	// normal forms (the forms of Upserted.Set), with the company fields
	// (on a sale they belong to the transaction, wherever they are sent).
	// A field sent as "" is kept with the value "" (no normal form is
	// ""): the record removes it.
	Tx map[string]any
	// Rows are the record's rows: the one of a flat record (none when it
	// carries only transaction fields), or those of sale_rows.
	Rows []RowRecord
	// Nested is true for a record with sale_rows: its row fields are
	// named "sale_rows.<i>.<field>" in rejections.
	Nested bool
	// TxProblem is a problem of a transaction-level field of the record.
	// It rejects every record of the transaction (Book.Decide): accepting
	// the others without it would store the purchase in a wrong currency,
	// state or customer.
	TxProblem *Problem
	// Ignored are the record's keys that are no field of a sale
	// (values.Ignored), a row's as "sale_rows.<key>" whatever the row:
	// the import run lists them as warnings.
	Ignored values.Ignored
}

// RowRecord is one row as given.
type RowRecord struct {
	// Fields are the row's fields in their normal forms: quantity a
	// json.Number rounded to two decimals, amounts int64 minor units
	// (discount positive), tags sorted; product_id, product_sku and ean
	// strings. A field sent as "" is left out: a row is replaced whole.
	Fields map[string]any
	// Product is the row's product: product_id, else product_sku, else
	// ean, with the product_* fields as its details (brand, title, type,
	// vendor, category). Book.Decide adds the unit price as its price.
	Product product.Ref
}

// Parser validates and normalises the records of one company.
type Parser struct {
	shortName string
	loc       *time.Location
	customers *customer.Parser
	products  *product.Parser
}

// NewParser returns a parser for c's records: naive datetimes are read in
// c's timezone and company fields carry c's short name.
func NewParser(c company.Company) *Parser {
	return &Parser{shortName: c.ShortName, loc: c.Location(),
		customers: customer.NewParser(c), products: product.NewParser(c)}
}

// Parse validates one record, a JSON object. It rejects, with a *Problem,
// a record that is not an object or has no sale_external_id, a bad row
// field, a transaction field inside a row and a row without its product
// or quantity: the record alone. A bad transaction-level field is
// Record.TxProblem, which rejects the whole transaction. A key that is no
// field of a sale (nor a company field of the company) is ignored and
// listed in Record.Ignored. null is absent; "" removes a
// transaction field (but sale_date, sale_currency, sale_exchange_rate
// and sale_state, which a sale keeps once given) and is absent in a row.
func (p *Parser) Parse(raw []byte) (Record, error) {
	m, field, reason := values.DecodeRecord(raw)
	if reason != "" {
		return Record{}, &Problem{Field: field, Reason: reason}
	}
	if v, ok := m[FieldCustomerID]; ok && values.NoCustomerID(v) {
		delete(m, FieldCustomerID) // a guest
	}
	m = customer.GuestByEmail(m, FieldCustomerID, FieldEmail)
	// The record's own country, when valid, is the country of a phone
	// number without + (an invalid one is sale_country's problem).
	country, _ := values.Country(m[FieldCountry])
	r := Record{Tx: map[string]any{}}
	if v, ok := m[FieldExternalID]; ok && v != nil {
		s, reason := id(v)
		if reason != "" {
			return Record{}, &Problem{Field: FieldExternalID, Reason: reason}
		}
		r.ExternalID = s.(string)
	} else {
		return Record{}, &Problem{Field: FieldExternalID, Reason: "sale_external_id is required on every record"}
	}
	flat := map[string]any{}
	for _, key := range slices.Sorted(maps.Keys(m)) {
		v := m[key]
		var err error
		switch _, isRow := rowFields[key]; {
		case v == nil || key == FieldExternalID || key == FieldRows:
		case isRow:
			flat[key] = v
		default:
			err = p.txField(&r, key, v, country)
		}
		if err != nil {
			return Record{}, err
		}
	}
	// After the transaction's own fields: a company field sent in a row
	// is the transaction's too, and the later value wins.
	if v := m[FieldRows]; v != nil {
		if err := p.nested(&r, v); err != nil {
			return Record{}, err
		}
	}
	if r.Nested {
		for _, key := range slices.Sorted(maps.Keys(flat)) {
			if !values.Blank(flat[key]) {
				return Record{}, &Problem{Field: key, Reason: "a record with sale_rows carries its row fields in its rows"}
			}
		}
		return r, nil
	}
	row, err := p.row(flat, "")
	if err != nil {
		return Record{}, err
	}
	if row != nil {
		r.Rows = []RowRecord{*row}
	}
	return r, nil
}

// nested reads sale_rows.
func (p *Parser) nested(r *Record, v any) error {
	if values.Blank(v) {
		return nil // an empty CSV cell
	}
	list, ok := v.([]any)
	if !ok {
		return &Problem{Field: FieldRows, Reason: "must be a list of row objects"}
	}
	r.Nested = true
	for i, e := range list {
		prefix := FieldRows + "." + strconv.Itoa(i) + "."
		m, ok := e.(map[string]any)
		if !ok {
			return &Problem{Field: strings.TrimSuffix(prefix, "."), Reason: "must be a row object"}
		}
		for _, key := range slices.Sorted(maps.Keys(m)) {
			if _, isRow := rowFields[key]; isRow || m[key] == nil {
				continue
			}
			if isTxField(key) {
				return &Problem{Field: safeName(prefix + key), Reason: "a transaction-level field belongs to the transaction, beside sale_rows, not in a row"}
			}
			// A company field: the transaction's, wherever sent. Any other
			// key is named without the row's index, so that the same
			// plugin field of every row is one warning.
			if !p.companyField(r, key, m[key]) {
				r.Ignored.Ignore(FieldRows + "." + key)
			}
			delete(m, key)
		}
		row, err := p.row(m, prefix)
		if err != nil {
			return err
		}
		if row == nil {
			return &Problem{Field: prefix + RowProductID, Reason: "a row needs product_id (or product_sku or ean)"}
		}
		r.Rows = append(r.Rows, *row)
	}
	return nil
}

// txField reads a transaction-level field (or a company field) of r;
// country is the record's sale_country ("" for none).
func (p *Parser) txField(r *Record, key string, v any, country string) error {
	if target, ok := customerFields[key]; ok {
		r.setTx(key, p.customerField(r, key, target, v, country))
		return nil
	}
	k, ok := txFields[key]
	if !ok {
		if !p.companyField(r, key, v) {
			r.Ignored.Ignore(key)
		}
		return nil
	}
	if values.Blank(v) {
		if permanent[key] {
			r.problem(key, key+" cannot be removed")
			return nil
		}
		r.setTx(key, "")
		return nil
	}
	nv, reason := value(k, v, p.loc)
	if reason != "" {
		r.problem(key, reason)
		return nil
	}
	r.setTx(key, nv)
	return nil
}

// customerField validates one field of the customer part with the
// customer's rules (and the customer's normal form: the sale's own copy
// of the field is normalised the same way). The customer parser wants an
// identifier in any record, so a field is checked beside a stand-in one;
// whether the transaction has a real one is Book.Decide's to say. A phone
// number is read with the record's country ("" for none), as the
// customer's would be. A blank is kept as "": it removes the sale's own
// field (a permission is then false, outcome), and it is not given in
// the customer part (customer.ParseEmbedded).
func (p *Parser) customerField(r *Record, key, target string, v any, country string) any {
	if values.Blank(v) {
		return ""
	}
	m := map[string]any{target: v, "external_id": "0"}
	switch target {
	case "external_id":
		m = map[string]any{target: v, "email": "stand-in@example.com"}
	case "phone_number":
		if country != "" {
			m["country"] = country
		}
	}
	c, err := p.customers.ParseMap(m)
	var prob *customer.Problem
	if errors.As(err, &prob) {
		r.problem(key, prob.Reason)
		return nil
	}
	if v, ok := c.Changes.Set[target]; ok {
		return v
	}
	return "" // removed
}

// companyField keeps "<ShortName>__<name>" as sent; the prefix is matched
// without regard to case and stored as the company's short name. It
// reports false for a key that is no company field of the company.
func (p *Parser) companyField(r *Record, key string, v any) bool {
	field, ok := values.CompanyField(p.shortName, key)
	if !ok {
		return false
	}
	if values.Blank(v) {
		v = ""
	}
	r.setTx(field, v)
	return true
}

// isTxField reports whether key is a transaction-level field, which a row
// must not carry.
func isTxField(key string) bool {
	_, tx := txFields[key]
	_, c := customerFields[key]
	return tx || c || key == FieldExternalID || key == FieldRows
}

// row validates the row fields m (row field names only: the callers leave
// the others out) of a row named with prefix in rejections; nil when m
// gives no row field at all.
func (p *Parser) row(m map[string]any, prefix string) (*RowRecord, error) {
	row := RowRecord{Fields: map[string]any{}}
	details := map[string]any{}
	for _, key := range slices.Sorted(maps.Keys(m)) {
		v := m[key]
		if v == nil || values.Blank(v) {
			continue
		}
		if d, ok := productDetails[key]; ok {
			details[d] = v
			continue
		}
		k, ok := rowFields[key]
		if !ok {
			continue // not reached: see the doc comment
		}
		nv, reason := value(k, v, p.loc)
		if reason != "" {
			return nil, &Problem{Field: prefix + key, Reason: reason}
		}
		row.Fields[key] = nv
	}
	if len(details) > 0 {
		d, err := p.products.Details(details)
		var prob *product.Problem
		if errors.As(err, &prob) {
			return nil, &Problem{Field: prefix + detailField(prob.Field), Reason: prob.Reason}
		}
		for field, v := range d {
			row.Fields[detailField(field)] = v
		}
		row.Product.Details = d
	}
	if len(row.Fields) == 0 {
		return nil, nil
	}
	row.Product.ExternalID, _ = row.Fields[RowProductID].(string)
	row.Product.SKU, _ = row.Fields[RowSKU].(string)
	row.Product.EAN, _ = row.Fields[RowEAN].(string)
	switch {
	case row.Product.Empty():
		return nil, &Problem{Field: prefix + RowProductID, Reason: "a row needs product_id (or product_sku or ean)"}
	case row.Fields[RowQuantity] == nil:
		return nil, &Problem{Field: prefix + RowQuantity, Reason: "quantity is required"}
	}
	return &row, nil
}

// detailField returns the row field of a product detail.
func detailField(productField string) string {
	for row, d := range productDetails {
		if d == productField {
			return row
		}
	}
	return productField
}

func (r *Record) setTx(key string, v any) {
	if v != nil {
		r.Tx[key] = v
	}
}

// problem keeps the first transaction-level problem of the record (in key
// order).
func (r *Record) problem(field, reason string) {
	if r.TxProblem == nil {
		r.TxProblem = &Problem{Field: field, Reason: reason}
	}
}
