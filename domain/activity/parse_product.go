package activity

import (
	"errors"
	"strings"

	"github.com/clientele/clientele/domain/product"
	"github.com/clientele/clientele/domain/values"
)

// maxRef is the longest product_id, sku or ean, as a product's
// external_id.
const maxRef = 200

// putRef reads product_id, sku or ean (to names the product field). They
// are kept in Fields too: retrieval shows what the event named.
func (d *draft) putRef(key, to string, v any) error {
	s, ok := values.Scalar(v)
	s = strings.TrimSpace(s)
	if !ok || len(s) > maxRef {
		// A list of EANs, which a product may have, cannot name one.
		return &Problem{Field: key, Reason: "must be a string (or a number) of at most 200 characters"}
	}
	if err := d.alias(key, to, v); err != nil {
		return err
	}
	d.ref[to], d.fields[key] = s, s
	return nil
}

// putDetail keeps a product detail for product.Parser.Details.
func (d *draft) putDetail(key, to string, v any) error {
	if err := d.alias(key, to, v); err != nil {
		return err
	}
	d.details[to] = v
	return nil
}

// alias records that key gave the product field to. Two spellings of one
// field (sku and product_sku) may both be given, with one value: a
// client that sends both means one thing, and either might be the one
// kept.
func (d *draft) alias(key, to string, v any) error {
	from := d.productFrom[to]
	prev := d.details[to]
	if r, ok := d.ref[to]; ok {
		prev = r
	}
	if len(from) > 0 && !sameValue(prev, v) {
		return &Problem{Field: key, Reason: "names the same product field as " + from[0] + " with another value; give one of them"}
	}
	d.productFrom[to] = append(from, key)
	return nil
}

// productRef returns the product the event names, with the details to
// create it from, validated by the product's rules. The details are kept
// in Fields under the names the record used, normalised.
func (p *Parser) productRef(d *draft) (product.Ref, error) {
	details, err := p.products.Details(d.details)
	if pp := (*product.Problem)(nil); errors.As(err, &pp) {
		field := pp.Field
		if from := d.productFrom[field]; len(from) > 0 {
			field = from[0]
		}
		return product.Ref{}, &Problem{Field: field, Reason: pp.Reason}
	}
	if err != nil {
		return product.Ref{}, err
	}
	for f, v := range details {
		for _, key := range d.productFrom[f] {
			d.fields[key] = v
		}
	}
	ref := product.Ref{ExternalID: d.ref[product.FieldExternalID], SKU: d.ref["sku"], EAN: d.ref["ean"]}
	if !ref.Empty() && len(details) > 0 {
		ref.Details = details
	}
	return ref, nil
}
