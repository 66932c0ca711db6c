package sale

import (
	"errors"
	"math/big"
	"slices"

	"github.com/clientele/clientele/domain/customer"
)

// transaction checks and completes the merged transaction fields.
func (d *decision) transaction() *Problem {
	if p := d.exchangeRate(); p != nil {
		return p
	}
	if d.s == nil {
		if _, ok := d.tx[FieldDate]; !ok {
			return &Problem{Field: FieldDate, Reason: "a new sale needs sale_date"}
		}
		if !d.identified() {
			return &Problem{Reason: "a new sale needs a customer identifier: sale_customer_id, sale_phone_number or sale_email"}
		}
	}
	if p := d.customerPart(); p != nil {
		return p
	}
	for _, f := range txConverted {
		if p := d.convert(d.tx, f, f); p != nil {
			return p
		}
	}
	total, given := d.tx[FieldTotal]
	d.hasTotal = given && total != "" || !given && d.s != nil && d.s.HasTotal
	return nil
}

func (d *decision) identified() bool {
	for _, f := range identifiers {
		if v, ok := d.tx[f]; ok && v != "" {
			return true
		}
	}
	return false
}

// exchangeRate finds the sale's currency and rate: sale_currency (given,
// else stored, else the company's); for another currency than the
// company's, sale_exchange_rate given, else the stored rate of that
// currency, else the company's table.
func (d *decision) exchangeRate() *Problem {
	stored := d.currency0()
	d.currency = stored
	if c, ok := d.tx[FieldCurrency].(string); ok {
		d.currency = c
	}
	given, _ := d.tx[FieldExchangeRate].(string)
	d.rate, d.rateText = nil, ""
	if d.currency == d.Book.currency {
		if given != "" && given != "1" {
			return &Problem{Field: FieldExchangeRate, Reason: "must be 1, or left out, for a sale in the company's currency"}
		}
		delete(d.tx, FieldExchangeRate)
		return nil
	}
	candidates := []string{given}
	if d.s != nil && stored == d.currency {
		candidates = append(candidates, d.s.Rate)
	}
	candidates = append(candidates, d.rates[d.currency])
	for _, c := range candidates {
		if r := parseRate(c); r != nil {
			d.rate, d.rateText = r, decimal(r)
			return nil
		}
	}
	return &Problem{Field: FieldCurrency, Reason: "needs sale_exchange_rate: the company has no exchange rate for this currency"}
}

// currency0 is the stored sale's currency, the company's for a new sale.
func (d *decision) currency0() string {
	if d.s != nil && d.s.Currency != "" {
		return d.s.Currency
	}
	return d.Book.currency
}

// customerPart validates the customer fields of the merged transaction
// as one customer record, the sale's customer part
// (customer.ParseEmbedded): a field sent as "" removes the sale's own
// copy, never the customer's field. When none is given there is no
// customer part.
func (d *decision) customerPart() *Problem {
	m := map[string]any{}
	var given []string
	for f, target := range customerFields {
		if v, ok := d.tx[f]; ok && customer.Given(v) {
			m[target] = v
			given = append(given, f)
		}
	}
	d.customer = nil
	if len(m) == 0 {
		return nil
	}
	c, err := d.customers.ParseEmbedded(m, nil)
	var prob *customer.Problem
	switch {
	case errors.As(err, &prob) && prob.Reason == customer.ReasonNoID:
		return &Problem{Field: slices.Min(given), Reason: "customer fields need a customer identifier: sale_customer_id, sale_phone_number or sale_email"}
	case errors.As(err, &prob):
		return &Problem{Field: saleField(prob.Field), Reason: prob.Reason}
	case err != nil:
		return &Problem{Reason: err.Error()}
	}
	d.customer = &c
	return nil
}

// saleField returns the sale field of a customer field.
func saleField(customerField string) string {
	for f, target := range customerFields {
		if target == customerField {
			return f
		}
	}
	return customerField
}

// convert replaces the amount f of m by f_in_currency divided by the
// rate, when m has that; name is how a rejection names f_in_currency. ""
// (removed) for either removes both.
func (d *decision) convert(m map[string]any, f, name string) *Problem {
	in, ok := m[f+inCurrency]
	switch {
	case !ok:
		if m[f] == "" {
			m[f+inCurrency] = ""
		}
		return nil
	case in == "":
		m[f] = ""
		return nil
	}
	v := in.(int64)
	if d.rate == nil {
		m[f] = v
		return nil
	}
	n := roundHalfAway(new(big.Rat).Quo(new(big.Rat).SetInt64(v), d.rate))
	if !n.IsInt64() {
		return &Problem{Field: name + inCurrency, Reason: "divided by the exchange rate " + reasonTooLarge}
	}
	m[f] = n.Int64()
	return nil
}
