package sale

import (
	"maps"
	"math/big"
)

// The fields the derived sale_total depends on besides the rows' totals:
// the transaction's discount, which it subtracts, and a row's deletion,
// which leaves the row out.
const (
	fieldDiscount = "sale_discount"
	rowIsDeleted  = "is_deleted"
)

// total computes the figures the read side derives the sale's total from
// (State.Totals and Discount: the stored ones, with the rows and the
// sale_discount of the accepted records in their place) and checks that
// the rows' totals minus the discount fit in an int64. The sum is exact
// (math/big): it is the result that must fit, whatever the order of the
// rows. When it does not, it returns the record to reject: the last
// accepted one that gives rows or sale_discount. A sale stored before
// the check existed may be over already; records that add neither are
// then accepted, since rejecting them would not bring it back.
func (d *decision) total() (int, *Problem) {
	totals := map[string]int64{}
	d.discount = 0
	if d.s != nil {
		maps.Copy(totals, d.s.Totals)
		d.discount = d.s.Discount
	}
	for _, o := range d.out {
		if t, ok := o.Fields[RowTotal].(int64); ok && o.Fields[rowIsDeleted] != true {
			totals[o.Key] = t
		} else {
			delete(totals, o.Key)
		}
	}
	switch v := d.tx[fieldDiscount].(type) {
	case int64:
		d.discount = v
	case string: // "" removes it
		d.discount = 0
	}
	d.totals = totals

	sum := new(big.Int)
	for _, t := range totals {
		sum.Add(sum, big.NewInt(t))
	}
	if sum.Sub(sum, big.NewInt(d.discount)).IsInt64() {
		return 0, nil
	}
	for k := len(d.accepted) - 1; k >= 0; k-- {
		r := d.t.Records[d.accepted[k]]
		_, discount := r.Tx[fieldDiscount]
		_, discountIn := r.Tx[fieldDiscount+inCurrency]
		if len(r.Rows) > 0 || discount || discountIn {
			return d.accepted[k], &Problem{Field: FieldTotal,
				Reason: "the rows' totals minus sale_discount (the sale's total when none is given) " + reasonTooLarge}
		}
	}
	return 0, nil
}
