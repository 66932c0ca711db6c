package sale

import (
	"encoding/json"
	"maps"
	"math/big"
	"strconv"
)

// rows decides the rows of the accepted records; false when it rejected
// a record for one of them.
func (d *decision) rows() bool {
	d.out, d.byKey = d.out[:0], map[string]int{}
	ok := true
	for _, i := range d.accepted {
		r := d.t.Records[i]
		out := make([]RowOutcome, 0, len(r.Rows))
		for j, row := range r.Rows {
			o, p := d.row(row, rowPrefix(r, j))
			if p != nil {
				d.errs[i], ok = p, false
				break
			}
			o.Key = d.t.Keys[i][j]
			out = append(out, o)
		}
		if d.errs[i] != nil {
			continue
		}
		for _, o := range out {
			if k, seen := d.byKey[o.Key]; seen {
				d.out[k] = o
				continue
			}
			d.byKey[o.Key] = len(d.out)
			d.out = append(d.out, o)
		}
	}
	return ok
}

// rowPrefix is how rejections name the fields of row j of r.
func rowPrefix(r Record, j int) string {
	if r.Nested {
		return FieldRows + "." + strconv.Itoa(j) + "."
	}
	return ""
}

// row converts a row's amounts, checks its unit price and computes its
// total.
func (d *decision) row(row RowRecord, prefix string) (RowOutcome, *Problem) {
	f := maps.Clone(row.Fields)
	for _, x := range rowConverted {
		if p := d.convert(f, x, prefix+x); p != nil {
			return RowOutcome{}, p
		}
	}
	price, priced := f[RowUnitPrice].(int64)
	if !priced && !d.hasTotal {
		return RowOutcome{}, &Problem{Field: prefix + RowUnitPrice,
			Reason: "unit_price (or unit_price_in_currency) is required when the sale has no sale_total"}
	}
	if _, ok := f[RowTotal]; !ok && priced {
		q, _ := new(big.Rat).SetString(string(f[RowQuantity].(json.Number)))
		t := new(big.Rat).Mul(new(big.Rat).SetInt64(price), q)
		if discount, ok := f[RowDiscount].(int64); ok {
			t.Sub(t, new(big.Rat).SetInt64(discount))
		}
		n := roundHalfAway(t)
		if !n.IsInt64() {
			return RowOutcome{}, &Problem{Field: prefix + RowTotal, Reason: "unit_price × quantity − discount " + reasonTooLarge}
		}
		f[RowTotal] = n.Int64()
	}
	ref := row.Product
	if priced {
		ref.Details = maps.Clone(ref.Details)
		if ref.Details == nil {
			ref.Details = map[string]any{}
		}
		ref.Details["price"] = price
	}
	return RowOutcome{Product: ref, Fields: f}, nil
}
