package sale_test

import (
	"encoding/json"
	"math/big"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/clientele/clientele/domain/fuzzcheck"
	"github.com/clientele/clientele/domain/sale"
	"github.com/clientele/clientele/domain/values"
)

// FuzzParse checks the sale parser on any bytes, and the decision of what
// it accepts: a refusal is a *Problem; an accepted record encodes to
// valid JSON without U+0000 and, when its transaction fields are valid,
// is its own normal form (written back as a sale record, flat or with
// sale_rows, it parses to the same record). Deciding it as a new sale
// accounts for it once, accepted or rejected with a *Problem, and what it
// accepts encodes to valid JSON.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		`{"sale_external_id": 1001, "sale_date": "2026-07-01 12:00:00", "sale_currency": "usd", "sale_exchange_rate": "1.0800",
			"sale_state": "processing", "sale_tags": ["b", "a", "b"], "sale_payment_method": "card", "sale_coupon_codes": ["X", 7],
			"sale_email": "Ann@Example.COM", "sale_phone_number": "+358 40 1234567", "sale_customer_id": 55, "sale_country": "uk",
			"sale_customer_can_email": "TRUE", "sale_customer_can_sms": "", "sale_discount": -50, "sale_shipping": "490.00",
			"sale_total": 1000.0, "sale_is_deleted": "0", "sale_conversion_url": "https://shop.example.com/thanks",
			"product_id": 55, "quantity": "2.50", "unit_price": "1000", "discount": -100, "tags": ["z", "a"],
			"product_brand": "Acme", "product_category": ["shoes", "men"], "unit": "pcs", "is_deleted": false}`,
		`{"sale_external_id": "S-2", "sale_date": "2026-07-01", "sale_customer_id": "C1", "acme__channel": "web",
			"sale_rows": [{"product_id": "p1", "quantity": 0.005, "unit_price_in_currency": 1150, "ACME__gift": true},
			{"product_sku": "K", "quantity": -1, "unit_price": 10, "total": -10, "external_id": "r2"}],
			"sale_currency": "SEK", "sale_total_in_currency": "2300"}`,
		`{"sale_external_id": "S-3", "sale_date": "2026-07-01T10:00:00Z", "sale_email": "a@example.com", "ean": "6410405082657",
			"quantity": "1e2", "unit_price": "9223372036854775807"}`,
		`{"sale_external_id": "S-4", "sale_first_name": "", "sale_shipping_method": "", "sale_state": "bogus"}`,
		`{"sale_external_id": "S-5", "sale_rows": [], "quantity": 1}`, `{"sale_rows": [{"product_id": "p"}]}`, `[]`,
		`{"sale_external_id": "S-6", "store_id": 1, "OTHER__x": 2, "sale_rows": [{"product_id": "p", "quantity": 1, "store_id": 1, "Ann Smith": 3}]}`,
	} {
		f.Add([]byte(s))
	}
	p := sale.NewParser(acme)
	f.Fuzz(func(t *testing.T, raw []byte) {
		if _, _, reason := values.DecodeRecord(raw); reason != "" {
			return // FuzzDecodeRecord's (domain/values) to check
		}
		r, err := p.Parse(raw)
		if err != nil {
			fuzzcheck.Rejection(t, err)
			return
		}
		fuzzcheck.JSON(t, "record", r)
		fuzzcheck.Ignored(t, r.Ignored)
		if r.ExternalID == "" {
			t.Fatal("accepted without a sale_external_id")
		}
		if r.TxProblem != nil {
			fuzzcheck.Rejection(t, r.TxProblem)
		} else {
			again, err := p.Parse(fuzzcheck.JSON(t, "normal form", normalForm(r)))
			if err != nil {
				t.Fatalf("the normal form of %s is refused: %v", raw, err)
			}
			first := r
			first.Ignored = nil // the normal form holds fields only
			if diff := cmp.Diff(first, again, cmpopts.EquateEmpty()); diff != "" {
				t.Fatalf("the normal form of %s parses to another record (-first +again):\n%s", raw, diff)
			}
		}
		n := 0
		o, rejected := sale.NewBook(func() string { n++; return "sale-" + strconv.Itoa(n) }, acme).Decide(sale.Merge([]sale.Record{r}))
		if len(o.Accepted)+len(rejected) != 1 {
			t.Fatalf("one record decided as %d accepted and %d rejected", len(o.Accepted), len(rejected))
		}
		for _, rej := range rejected {
			fuzzcheck.Rejection(t, rej.Err)
		}
		fuzzcheck.JSON(t, "outcome", o)
	})
}

// normalForm writes a parsed record back as a sale record.
func normalForm(r sale.Record) map[string]any {
	m := map[string]any{sale.FieldExternalID: r.ExternalID}
	for k, v := range r.Tx {
		m[k] = v
	}
	if r.Nested {
		rows := []any{}
		for _, row := range r.Rows {
			rows = append(rows, row.Fields)
		}
		m[sale.FieldRows] = rows
		return m
	}
	for _, row := range r.Rows {
		for k, v := range row.Fields {
			m[k] = v
		}
	}
	return m
}

// FuzzAmounts checks the numbers of a sale, sent as strings (CSV): only
// decimal numbers are accepted; a quantity is rounded to two decimals
// (half away from zero, within 0.005 of what was sent); money is whole
// minor units; a rate is positive; and every accepted normal form is
// accepted again unchanged.
func FuzzAmounts(f *testing.F) {
	for _, s := range []string{"1", "2.50", "0.005", "0.0049", "-0.005", "1e2", "1E-3", "10.5", "-50", "1.0800", "0", "9e99",
		"123456789012345678901234567890", "1e100", ".5", "5."} {
		f.Add(s)
	}
	p := sale.NewParser(acme)
	f.Fuzz(func(t *testing.T, s string) {
		parse := func(field string, v any) (sale.Record, bool) {
			m := map[string]any{sale.FieldExternalID: "s", sale.RowProductID: "p", sale.RowQuantity: 1}
			m[field] = v
			raw, _ := json.Marshal(m)
			r, err := p.Parse(raw)
			if err != nil {
				fuzzcheck.Rejection(t, err)
				return r, false
			}
			if r.TxProblem != nil {
				fuzzcheck.Rejection(t, r.TxProblem)
				return r, false
			}
			return r, true
		}
		accepted := func(field string, v any) any {
			if strings.TrimSpace(s) == "" {
				return nil // a blank value removes a field or is absent
			}
			r, ok := parse(field, v)
			if !ok {
				return nil
			}
			var got any
			if len(r.Rows) == 1 {
				got = r.Rows[0].Fields[field]
			}
			if tx, ok := r.Tx[field]; ok {
				got = tx
			}
			if !fuzzcheck.Decimal(s) {
				t.Fatalf("%s %q is accepted as %v, but it is no decimal number", field, s, got)
			}
			if again, ok := parse(field, got); !ok || !cmp.Equal(again, r) {
				t.Fatalf("%s %q is accepted as %v (%T), which re-parses as %+v", field, s, got, got, again)
			}
			return got
		}
		sent, _ := new(big.Rat).SetString(strings.TrimSpace(s))
		if q, ok := accepted(sale.RowQuantity, s).(json.Number); ok {
			r, _ := new(big.Rat).SetString(string(q))
			hundredths := new(big.Rat).Mul(r, big.NewRat(100, 1))
			diff := new(big.Rat).Abs(new(big.Rat).Sub(r, sent))
			if !hundredths.IsInt() || diff.Cmp(big.NewRat(1, 200)) > 0 || strings.ContainsAny(string(q), "eE") {
				t.Fatalf("quantity %q is %q, not it rounded to two decimals", s, q)
			}
		}
		for _, field := range []string{sale.RowUnitPrice, sale.RowDiscount, sale.RowTotal, "sale_shipping", "sale_discount", sale.FieldTotal} {
			if n, ok := accepted(field, s).(int64); ok {
				abs := new(big.Rat).Abs(sent)
				if want := new(big.Rat).SetInt64(n); want.Cmp(sent) != 0 && !(strings.Contains(field, "discount") && want.Cmp(abs) == 0) {
					t.Fatalf("%s %q is accepted as %d", field, s, n)
				}
			}
		}
		if rate, ok := accepted(sale.FieldExchangeRate, s).(string); ok {
			if r, _ := new(big.Rat).SetString(rate); r == nil || r.Sign() <= 0 || r.Cmp(sent) != 0 {
				t.Fatalf("rate %q is accepted as %q", s, rate)
			}
		}
	})
}
