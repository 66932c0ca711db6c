package sale_test

import (
	"errors"
	"slices"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/clientele/clientele/domain/customer"
	"github.com/clientele/clientele/domain/product"
	"github.com/clientele/clientele/domain/sale"
)

// decide parses records (all of one sale), merges and decides them with
// a book holding stored.
func decide(t *testing.T, stored *sale.State, records ...string) (*sale.Book, sale.Outcome, map[int]string) {
	t.Helper()
	p := sale.NewParser(acme)
	var rs []sale.Record
	for _, raw := range records {
		r, err := p.Parse([]byte(raw))
		if err != nil {
			t.Fatalf("parse %s: %v", raw, err)
		}
		rs = append(rs, r)
	}
	n := 0
	b := sale.NewBook(func() string { n++; return "sale-" + strconv.Itoa(n) }, acme)
	if stored != nil {
		b.Load(*stored)
	}
	o, rejected := b.Decide(sale.Merge(rs))
	fields := map[int]string{}
	for _, r := range rejected {
		var prob *sale.Problem
		if !errors.As(r.Err, &prob) {
			t.Fatalf("record %d rejected without a *Problem: %v", r.Record, r.Err)
		}
		fields[r.Record] = map[bool]string{true: "-", false: prob.Field}[prob.Field == ""]
	}
	return b, o, fields
}

// stored is a sale already imported, in EUR.
func stored() *sale.State {
	return &sale.State{ID: "old", ExternalID: "S", CustomerID: "cust-1", Version: 3, Currency: "EUR", SaleState: "COMPLETE"}
}

// storedUSD is a sale already imported, in USD at 1.25.
func storedUSD() *sale.State {
	s := stored()
	s.Currency, s.Rate = "USD", "1.25"
	return s
}

const head = `"sale_external_id": "S", "sale_date": "2026-07-01T10:00:00Z", "sale_email": "ann@example.com"`

func TestDecide(t *testing.T) {
	tests := []struct {
		name     string
		stored   *sale.State
		records  []string
		rejected map[int]string // index: field ("-" for none)
		set      map[string]any // nil: not checked
		unset    []string
		rows     []sale.RowOutcome // nil: not checked (Product.Details not compared)
		check    func(t *testing.T, o sale.Outcome)
	}{
		{name: "flat new sale with the transaction fields on a later row",
			records: []string{
				`{"sale_external_id": "S", "product_id": "1", "quantity": 1, "unit_price": 1000}`,
				`{` + head + `, "product_id": "2", "quantity": 2, "unit_price": 500}`},
			set: map[string]any{"sale_date": "2026-07-01T10:00:00Z", "sale_state": "COMPLETE", "sale_currency": "EUR"},
			rows: []sale.RowOutcome{
				{Key: "product:id:1#0", Fields: map[string]any{"product_id": "1", "quantity": num("1"), "unit_price": int64(1000), "total": int64(1000)}},
				{Key: "product:id:2#0", Fields: map[string]any{"product_id": "2", "quantity": num("2"), "unit_price": int64(500), "total": int64(1000)}}},
			check: func(t *testing.T, o sale.Outcome) {
				if !o.Created || o.SaleID != "sale-1" || o.CustomerID != "" {
					t.Errorf("new sale: %+v", o)
				}
				if diff := cmp.Diff(map[string]any{"sale_email": "ann@example.com"}, o.Personal); diff != "" {
					t.Errorf("personal (-want +got):\n%s", diff)
				}
			}},
		{name: "nested new sale",
			records: []string{`{` + head + `, "sale_rows": [
				{"product_id": "1", "quantity": 1, "unit_price": 1000},
				{"product_id": "1", "quantity": 3, "unit_price": 10, "external_id": "r9"}]}`},
			rows: []sale.RowOutcome{
				{Key: "product:id:1#0", Fields: map[string]any{"product_id": "1", "quantity": num("1"), "unit_price": int64(1000), "total": int64(1000)}},
				{Key: "id:r9", Fields: map[string]any{"product_id": "1", "external_id": "r9", "quantity": num("3"), "unit_price": int64(10), "total": int64(30)}}}},
		{name: "new sale without sale_date rejects every record",
			records: []string{
				`{"sale_external_id": "S", "sale_email": "a@b.fi", "product_id": "1", "quantity": 1, "unit_price": 1}`,
				`{"sale_external_id": "S", "product_id": "2", "quantity": 1, "unit_price": 1}`},
			rejected: map[int]string{0: "sale_date", 1: "sale_date"}},
		{name: "new sale without customer identifier rejects every record",
			records: []string{
				`{"sale_external_id": "S", "sale_date": "2026-07-01", "sale_first_name": "Ann", "product_id": "1", "quantity": 1, "unit_price": 1}`,
				`{"sale_external_id": "S", "product_id": "2", "quantity": 1, "unit_price": 1}`},
			rejected: map[int]string{0: "-", 1: "-"}},
		{name: "a customer identifier removed is none",
			records:  []string{`{"sale_external_id": "S", "sale_date": "2026-07-01", "sale_email": "", "product_id": "1", "quantity": 1, "unit_price": 1}`},
			rejected: map[int]string{0: "-"}},
		{name: "existing sale needs no date nor customer",
			stored:  stored(),
			records: []string{`{"sale_external_id": "S", "product_id": "1", "quantity": 1, "unit_price": 7}`},
			set:     map[string]any{},
			check: func(t *testing.T, o sale.Outcome) {
				if o.Created || o.SaleID != "old" || o.CustomerID != "cust-1" || o.Customer != nil || len(o.Rows) != 1 {
					t.Errorf("existing sale: %+v", o)
				}
			}},
		{name: "existing sale: customer fields need an identifier",
			stored:   stored(),
			records:  []string{`{"sale_external_id": "S", "sale_first_name": "Ann", "product_id": "1", "quantity": 1, "unit_price": 7}`},
			rejected: map[int]string{0: "sale_first_name"}},
		{name: "a row without unit_price rejects its record only",
			records: []string{
				`{` + head + `, "product_id": "1", "quantity": 1, "unit_price": 1}`,
				`{"sale_external_id": "S", "product_id": "2", "quantity": 1}`,
				`{"sale_external_id": "S", "sale_rows": [{"product_id": "3", "quantity": 1, "unit_price": 1}, {"product_id": "4", "quantity": 1}]}`},
			rejected: map[int]string{1: "unit_price", 2: "sale_rows.1.unit_price"},
			rows:     []sale.RowOutcome{{Key: "product:id:1#0", Fields: map[string]any{"product_id": "1", "quantity": num("1"), "unit_price": int64(1), "total": int64(1)}}}},
		{name: "a rejected record gives no transaction field",
			records: []string{
				`{` + head + `, "product_id": "1", "quantity": 1}`,
				`{"sale_external_id": "S", "product_id": "2", "quantity": 1, "unit_price": 1}`},
			rejected: map[int]string{0: "unit_price", 1: "sale_date"}},
		{name: "sale_total on any record: rows need no unit_price, and get no computed total",
			records: []string{
				`{"sale_external_id": "S", "product_id": "1", "quantity": 1}`,
				`{` + head + `, "sale_total": "1500.00", "product_id": "2", "quantity": 2}`},
			set: map[string]any{"sale_date": "2026-07-01T10:00:00Z", "sale_state": "COMPLETE", "sale_currency": "EUR", "sale_total": int64(1500)},
			rows: []sale.RowOutcome{
				{Key: "product:id:1#0", Fields: map[string]any{"product_id": "1", "quantity": num("1")}},
				{Key: "product:id:2#0", Fields: map[string]any{"product_id": "2", "quantity": num("2")}}}},
		{name: "sale_total_in_currency too",
			records: []string{`{` + head + `, "sale_total_in_currency": 100, "product_id": "1", "quantity": 1}`},
			set: map[string]any{"sale_date": "2026-07-01T10:00:00Z", "sale_state": "COMPLETE", "sale_currency": "EUR",
				"sale_total": int64(100), "sale_total_in_currency": int64(100)}},
		{name: "a stored sale_total too",
			stored:  func() *sale.State { s := stored(); s.HasTotal = true; return s }(),
			records: []string{`{"sale_external_id": "S", "product_id": "1", "quantity": 1}`}},
		{name: "removing sale_total needs unit_price again",
			stored:   func() *sale.State { s := stored(); s.HasTotal = true; return s }(),
			records:  []string{`{"sale_external_id": "S", "sale_total": "", "product_id": "1", "quantity": 1}`},
			rejected: map[int]string{0: "unit_price"}},
		{name: "unit_price_in_currency is a unit price",
			records: []string{`{` + head + `, "product_id": "1", "quantity": 2, "unit_price_in_currency": 300}`},
			rows: []sale.RowOutcome{{Key: "product:id:1#0", Fields: map[string]any{"product_id": "1", "quantity": num("2"),
				"unit_price_in_currency": int64(300), "unit_price": int64(300), "total": int64(600)}}}},
		{name: "quantity rounding and computed totals",
			records: []string{`{` + head + `, "sale_rows": [
				{"product_id": "a", "quantity": 0.003, "unit_price": 1000},
				{"product_id": "b", "quantity": "2.005", "unit_price": 999, "discount": -100},
				{"product_id": "c", "quantity": 0.5, "unit_price": 1},
				{"product_id": "d", "quantity": -0.5, "unit_price": 1},
				{"product_id": "e", "quantity": 1.333, "unit_price": 100},
				{"product_id": "f", "quantity": 1, "unit_price": 100, "total": 90}]}`},
			rows: []sale.RowOutcome{
				{Key: "product:id:a#0", Fields: map[string]any{"product_id": "a", "quantity": num("0"), "unit_price": int64(1000), "total": int64(0)}},
				// 999 × 2.01 = 2007.99, − 100 = 1907.99
				{Key: "product:id:b#0", Fields: map[string]any{"product_id": "b", "quantity": num("2.01"), "unit_price": int64(999), "discount": int64(100), "total": int64(1908)}},
				{Key: "product:id:c#0", Fields: map[string]any{"product_id": "c", "quantity": num("0.5"), "unit_price": int64(1), "total": int64(1)}},
				{Key: "product:id:d#0", Fields: map[string]any{"product_id": "d", "quantity": num("-0.5"), "unit_price": int64(1), "total": int64(-1)}},
				{Key: "product:id:e#0", Fields: map[string]any{"product_id": "e", "quantity": num("1.33"), "unit_price": int64(100), "total": int64(133)}},
				{Key: "product:id:f#0", Fields: map[string]any{"product_id": "f", "quantity": num("1"), "unit_price": int64(100), "total": int64(90)}}}},
		{name: "negative discounts are discounts",
			records: []string{`{` + head + `, "sale_discount": -200, "product_id": "1", "quantity": 1, "unit_price": 1000, "discount": "-250", "discount_in_currency": -250}`},
			set:     map[string]any{"sale_date": "2026-07-01T10:00:00Z", "sale_state": "COMPLETE", "sale_currency": "EUR", "sale_discount": int64(200)},
			rows: []sale.RowOutcome{{Key: "product:id:1#0", Fields: map[string]any{"product_id": "1", "quantity": num("1"), "unit_price": int64(1000),
				"discount": int64(250), "discount_in_currency": int64(250), "total": int64(750)}}}},
		{name: "currency with its rate: _in_currency amounts divided and rounded",
			records: []string{`{` + head + `, "sale_currency": "usd", "sale_exchange_rate": "1.250", "sale_total_in_currency": 2001,
				"sale_shipping_in_currency": 5, "sale_shipping": 999, "sale_discount_in_currency": 3,
				"sale_rows": [{"product_id": "1", "quantity": 2, "unit_price": 1, "unit_price_in_currency": 1000, "discount_in_currency": 5, "total_in_currency": -5}]}`},
			set: map[string]any{"sale_date": "2026-07-01T10:00:00Z", "sale_state": "COMPLETE", "sale_currency": "USD", "sale_exchange_rate": "1.25",
				"sale_total_in_currency": int64(2001), "sale_total": int64(1601), // 1600.8
				"sale_shipping_in_currency": int64(5), "sale_shipping": int64(4), // 4, the 999 given is replaced
				"sale_discount_in_currency": int64(3), "sale_discount": int64(2)}, // 2.4
			rows: []sale.RowOutcome{{Key: "product:id:1#0", Fields: map[string]any{"product_id": "1", "quantity": num("2"),
				"unit_price_in_currency": int64(1000), "unit_price": int64(800),
				"discount_in_currency": int64(5), "discount": int64(4), // 4
				"total_in_currency": int64(-5), "total": int64(-4)}}}}, // -4
		{name: "halves rounded away from zero in conversions",
			records: []string{`{` + head + `, "sale_currency": "USD", "sale_exchange_rate": 2,
				"sale_rows": [{"product_id": "1", "quantity": 1, "unit_price_in_currency": 5, "discount_in_currency": 3, "total_in_currency": -5}]}`},
			rows: []sale.RowOutcome{{Key: "product:id:1#0", Fields: map[string]any{"product_id": "1", "quantity": num("1"),
				"unit_price_in_currency": int64(5), "unit_price": int64(3), "discount_in_currency": int64(3), "discount": int64(2),
				"total_in_currency": int64(-5), "total": int64(-3)}}}},
		{name: "currency from the company's table",
			records: []string{`{` + head + `, "sale_currency": "SEK", "sale_shipping_in_currency": 23, "product_id": "1", "quantity": 1, "unit_price_in_currency": 1000}`},
			set: map[string]any{"sale_date": "2026-07-01T10:00:00Z", "sale_state": "COMPLETE", "sale_currency": "SEK", "sale_exchange_rate": "11.5",
				"sale_shipping_in_currency": int64(23), "sale_shipping": int64(2)},
			rows: []sale.RowOutcome{{Key: "product:id:1#0", Fields: map[string]any{"product_id": "1", "quantity": num("1"),
				"unit_price_in_currency": int64(1000), "unit_price": int64(87), "total": int64(87)}}}}, // 86.96
		{name: "currency without a rate rejects every record",
			records: []string{
				`{` + head + `, "sale_currency": "GBP", "product_id": "1", "quantity": 1, "unit_price": 1}`,
				`{"sale_external_id": "S", "product_id": "2", "quantity": 1, "unit_price": 1}`},
			rejected: map[int]string{0: "sale_currency", 1: "sale_currency"}},
		{name: "a rate other than 1 for the company's currency is refused",
			records:  []string{`{` + head + `, "sale_exchange_rate": "1.08", "product_id": "1", "quantity": 1, "unit_price": 1}`},
			rejected: map[int]string{0: "sale_exchange_rate"}},
		{name: "the company's currency: rate 1, not recorded, amounts copied",
			records: []string{`{` + head + `, "sale_currency": "eur", "sale_exchange_rate": "1.000", "sale_total_in_currency": 10, "product_id": "1", "quantity": 1, "unit_price": 1}`},
			set: map[string]any{"sale_date": "2026-07-01T10:00:00Z", "sale_state": "COMPLETE", "sale_currency": "EUR",
				"sale_total_in_currency": int64(10), "sale_total": int64(10)}},
		{name: "existing sale converts with its stored rate",
			stored:  storedUSD(),
			records: []string{`{"sale_external_id": "S", "product_id": "1", "quantity": 1, "unit_price_in_currency": 125}`},
			set:     map[string]any{},
			rows: []sale.RowOutcome{{Key: "product:id:1#0", Fields: map[string]any{"product_id": "1", "quantity": num("1"),
				"unit_price_in_currency": int64(125), "unit_price": int64(100), "total": int64(100)}}}},
		{name: "existing sale changing currency takes the new currency's rate",
			stored:  storedUSD(),
			records: []string{`{"sale_external_id": "S", "sale_currency": "SEK"}`},
			set:     map[string]any{"sale_currency": "SEK", "sale_exchange_rate": "11.5"}},
		{name: "existing sale back to the company's currency drops its rate",
			stored:  storedUSD(),
			records: []string{`{"sale_external_id": "S", "sale_currency": "EUR"}`},
			set:     map[string]any{"sale_currency": "EUR"},
			unset:   []string{"sale_exchange_rate"}},
		{name: "a given state, any case",
			records: []string{`{` + head + `, "sale_state": "pending_payment"}`},
			set:     map[string]any{"sale_date": "2026-07-01T10:00:00Z", "sale_state": "PENDING_PAYMENT", "sale_currency": "EUR"}},
		{name: "existing sale cancelled",
			stored:  stored(),
			records: []string{`{"sale_external_id": "S", "sale_state": "CANCELLED"}`},
			set:     map[string]any{"sale_state": "CANCELLED"}},
		{name: "existing sale keeps its state when none is given",
			stored:  stored(),
			records: []string{`{"sale_external_id": "S", "sale_shop_id": 7}`},
			set:     map[string]any{"sale_shop_id": "7"}},
		{name: "an unknown state rejects every record",
			records: []string{
				`{` + head + `, "product_id": "1", "quantity": 1, "unit_price": 1}`,
				`{"sale_external_id": "S", "sale_state": "SHIPPED", "product_id": "2", "quantity": 1, "unit_price": 1}`},
			rejected: map[int]string{0: "sale_state", 1: "sale_state"}},
		{name: "a bad customer field rejects every record, named as the sale field",
			records: []string{
				`{` + head + `, "product_id": "1", "quantity": 1, "unit_price": 1}`,
				`{"sale_external_id": "S", "sale_email": "nobody", "product_id": "2", "quantity": 1, "unit_price": 1}`},
			rejected: map[int]string{0: "sale_email", 1: "sale_email"}},
		{name: "row keys",
			records: []string{
				`{` + head + `, "sale_rows": [
					{"product_id": 1, "quantity": 1, "unit_price": 1},
					{"product_id": "1", "quantity": 2, "unit_price": 1},
					{"product_sku": "K", "ean": "E", "quantity": 1, "unit_price": 1},
					{"ean": "E", "quantity": 1, "unit_price": 1}]}`,
				`{"sale_external_id": "S", "product_id": "1", "product_sku": "K", "quantity": 3, "unit_price": 1}`,
				`{"sale_external_id": "S", "external_id": "r1", "product_id": "1", "quantity": 4, "unit_price": 1}`},
			check: func(t *testing.T, o sale.Outcome) {
				var keys []string
				for _, r := range o.Rows {
					keys = append(keys, r.Key)
				}
				want := []string{"product:id:1#0", "product:id:1#1", "product:sku:K#0", "product:ean:E#0", "product:id:1#2", "id:r1"}
				if diff := cmp.Diff(want, keys); diff != "" {
					t.Errorf("keys (-want +got):\n%s", diff)
				}
			}},
		{name: "a later row of the same key replaces the earlier in its place",
			records: []string{
				`{` + head + `, "external_id": "r1", "product_id": "1", "quantity": 1, "unit_price": 1}`,
				`{"sale_external_id": "S", "product_id": "2", "quantity": 1, "unit_price": 1}`,
				`{"sale_external_id": "S", "external_id": "r1", "product_id": "3", "quantity": 1, "unit_price": 1}`},
			rows: []sale.RowOutcome{
				{Key: "id:r1", Fields: map[string]any{"external_id": "r1", "product_id": "3", "quantity": num("1"), "unit_price": int64(1), "total": int64(1)}},
				{Key: "product:id:2#0", Fields: map[string]any{"product_id": "2", "quantity": num("1"), "unit_price": int64(1), "total": int64(1)}}}},
		{name: "later transaction fields win; removals kept",
			stored: stored(),
			records: []string{
				`{"sale_external_id": "S", "sale_shipping_method": "post", "sale_datasource": "erp", "ACME__channel": "web"}`,
				`{"sale_external_id": "S", "sale_shipping_method": "courier", "sale_datasource": "", "sale_is_deleted": "", "sale_city": "", "sale_email": "a@b.fi"}`},
			set:   map[string]any{"sale_shipping_method": "courier", "ACME__channel": "web"},
			unset: []string{"sale_datasource", "sale_is_deleted"},
			check: func(t *testing.T, o sale.Outcome) {
				if diff := cmp.Diff([]string{"sale_city"}, o.PersonalUnset); diff != "" {
					t.Errorf("personal unset (-want +got):\n%s", diff)
				}
			}},
		{name: "company fields of rows are the transaction's",
			records: []string{
				`{` + head + `, "ACME__channel": "web", "product_id": "1", "quantity": 1, "unit_price": 1}`,
				`{"sale_external_id": "S", "sale_rows": [{"acme__gift": true, "product_id": "2", "quantity": 1, "unit_price": 1}]}`},
			set: map[string]any{"sale_date": "2026-07-01T10:00:00Z", "sale_state": "COMPLETE", "sale_currency": "EUR",
				"ACME__channel": "web", "ACME__gift": true},
			rows: []sale.RowOutcome{
				{Key: "product:id:1#0", Fields: map[string]any{"product_id": "1", "quantity": num("1"), "unit_price": int64(1), "total": int64(1)}},
				{Key: "product:id:2#0", Fields: map[string]any{"product_id": "2", "quantity": num("1"), "unit_price": int64(1), "total": int64(1)}}}},
		{name: "personal fields apart; language and permissions are not personal; the customer part",
			records: []string{`{"sale_external_id": "S", "sale_date": "2026-07-01T10:00:00Z", "sale_customer_id": 42, "sale_phone_number": "+358 40 1234567",
				"sale_first_name": "Ann", "sale_customer_language": "fi", "sale_customer_can_email": true, "sale_customer_can_sms": "",
				"sale_conversion_user_agent": "Mozilla", "sale_country": "fi"}`},
			set: map[string]any{"sale_date": "2026-07-01T10:00:00Z", "sale_state": "COMPLETE", "sale_currency": "EUR",
				"sale_customer_language": "fi", "sale_customer_can_email": true, "sale_customer_can_sms": false},
			check: func(t *testing.T, o sale.Outcome) {
				want := map[string]any{"sale_customer_id": "42", "sale_phone_number": "+358401234567", "sale_first_name": "Ann",
					"sale_conversion_user_agent": "Mozilla", "sale_country": "FI"}
				if diff := cmp.Diff(want, o.Personal); diff != "" {
					t.Errorf("personal (-want +got):\n%s", diff)
				}
				// sale_customer_can_sms "" is false on the sale, and not
				// given to the customer (customer.ParseEmbedded).
				wantC := &customer.Record{ExternalID: "42", Phone: "+358401234567", Embedded: true, Changes: customer.Changes{Set: map[string]any{
					"external_id": "42", "phone_number": "+358401234567", "first_name": "Ann", "language": "fi",
					"can_email": true, "country": "FI"}}}
				if diff := cmp.Diff(wantC, o.Customer, cmpopts.EquateEmpty()); diff != "" {
					t.Errorf("customer (-want +got):\n%s", diff)
				}
			}},
		{name: "a blank customer field removes the sale's own copy, never the customer's (WooCommerce's order without a phone)",
			stored:  stored(),
			records: []string{`{"sale_external_id": "S", "sale_customer_id": "17", "sale_phone_number": "", "sale_first_name": " "}`},
			check: func(t *testing.T, o sale.Outcome) {
				if diff := cmp.Diff([]string{"sale_first_name", "sale_phone_number"}, o.PersonalUnset); diff != "" {
					t.Errorf("personal unset (-want +got):\n%s", diff)
				}
				wantC := &customer.Record{ExternalID: "17", Embedded: true, Changes: customer.Changes{Set: map[string]any{"external_id": "17"}}}
				if diff := cmp.Diff(wantC, o.Customer, cmpopts.EquateEmpty()); diff != "" {
					t.Errorf("customer (-want +got):\n%s", diff)
				}
			}},
		{name: "only blank customer fields: no customer part, and no customer identifier needed",
			stored:  stored(),
			records: []string{`{"sale_external_id": "S", "sale_phone_number": "", "sale_city": ""}`},
			check: func(t *testing.T, o sale.Outcome) {
				if o.Customer != nil || !slices.Equal(o.PersonalUnset, []string{"sale_city", "sale_phone_number"}) {
					t.Errorf("customer %+v, personal unset %v; want none, and both removed from the sale", o.Customer, o.PersonalUnset)
				}
			}},
		{name: "a new sale whose only identifier is blank has none",
			records:  []string{`{` + `"sale_external_id": "S", "sale_date": "2026-07-01", "sale_phone_number": "", "product_id": "1", "quantity": 1, "unit_price": 1}`},
			rejected: map[int]string{0: "-"}},
		{name: "a returned row: price 0 and tags CANCELLED replace the stored row",
			stored:  stored(),
			records: []string{`{"sale_external_id": "S", "external_id": "r1", "product_id": "1", "quantity": 1, "unit_price": 0, "tags": "CANCELLED"}`},
			rows: []sale.RowOutcome{{Key: "id:r1", Fields: map[string]any{"external_id": "r1", "product_id": "1", "quantity": num("1"),
				"unit_price": int64(0), "total": int64(0), "tags": []string{"CANCELLED"}}}}},
		{name: "product reference with its details and the unit price as price",
			records: []string{`{` + head + `, "product_sku": "K", "ean": "E", "product_title": "Shoe", "product_category": "shoes", "quantity": 1, "unit_price_in_currency": 500}`},
			check: func(t *testing.T, o sale.Outcome) {
				want := product.Ref{SKU: "K", EAN: "E", Details: map[string]any{"title": "Shoe", "category": "shoes", "price": int64(500)}}
				if diff := cmp.Diff(want, o.Rows[0].Product); diff != "" {
					t.Errorf("product (-want +got):\n%s", diff)
				}
			}},
	}
	ignoreDetails := cmpopts.IgnoreFields(sale.RowOutcome{}, "Product")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, o, rejected := decide(t, tt.stored, tt.records...)
			if diff := cmp.Diff(tt.rejected, rejected, cmpopts.EquateEmpty()); diff != "" {
				t.Fatalf("rejected (-want +got):\n%s", diff)
			}
			var accepted []int
			for i := range tt.records {
				if _, ok := tt.rejected[i]; !ok {
					accepted = append(accepted, i)
				}
			}
			if diff := cmp.Diff(accepted, o.Accepted, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("accepted (-want +got):\n%s", diff)
			}
			if (o.SaleID == "") != (len(accepted) == 0) {
				t.Errorf("sale id %q with %d accepted", o.SaleID, len(accepted))
			}
			if tt.set != nil {
				if diff := cmp.Diff(tt.set, o.Set, cmpopts.EquateEmpty()); diff != "" {
					t.Errorf("set (-want +got):\n%s", diff)
				}
				if diff := cmp.Diff(tt.unset, o.Unset, cmpopts.EquateEmpty()); diff != "" {
					t.Errorf("unset (-want +got):\n%s", diff)
				}
			}
			if tt.rows != nil {
				if diff := cmp.Diff(tt.rows, o.Rows, ignoreDetails); diff != "" {
					t.Errorf("rows (-want +got):\n%s", diff)
				}
			}
			if tt.check != nil {
				tt.check(t, o)
			}
		})
	}
}

func TestBookState(t *testing.T) {
	b, o, rejected := decide(t, nil, `{`+head+`, "sale_currency": "USD", "sale_exchange_rate": 1.1, "sale_total": 5, "sale_state": "NEW"}`)
	if len(rejected) != 0 {
		t.Fatalf("rejected %v", rejected)
	}
	b.SetCustomer(o.SaleID, "cust-9")
	want := []sale.State{{ID: "sale-1", ExternalID: "S", CustomerID: "cust-9", Version: 1, Currency: "USD", Rate: "1.1", SaleState: "NEW", HasTotal: true}}
	if diff := cmp.Diff(want, b.Touched(), cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("new sale (-want +got):\n%s", diff)
	}

	// A second transaction of the same sale in the chunk sees the first.
	o2, rej := b.Decide(sale.Merge([]sale.Record{mustParse(t, `{"sale_external_id": "S", "sale_state": "CANCELLED", "sale_total": ""}`)}))
	if len(rej) != 0 || o2.Created || o2.SaleID != "sale-1" || o2.CustomerID != "cust-9" || !o2.Changed() {
		t.Fatalf("second decision: %+v %v", o2, rej)
	}
	want[0].Version, want[0].SaleState, want[0].HasTotal = 2, "CANCELLED", false
	if diff := cmp.Diff(want, b.Touched(), cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("updated sale (-want +got):\n%s", diff)
	}

	// Nothing to change: accepted, no version, not touched.
	b, o, _ = decide(t, stored(), `{"sale_external_id": "S"}`)
	if o.SaleID != "old" || o.Changed() || len(b.Touched()) != 0 || len(o.Accepted) != 1 {
		t.Errorf("no change: %+v, touched %+v", o, b.Touched())
	}
	// A change: version + 1.
	b, _, _ = decide(t, stored(), `{"sale_external_id": "S", "sale_state": "closed"}`)
	if got := b.Touched(); len(got) != 1 || got[0].Version != 4 || got[0].SaleState != "CLOSED" || got[0].CustomerID != "cust-1" {
		t.Errorf("changed: %+v", got)
	}
	// Every record rejected: nothing touched.
	b, o, _ = decide(t, nil, `{"sale_external_id": "S", "product_id": "1", "quantity": 1, "unit_price": 1}`)
	if o.SaleID != "" || len(b.Touched()) != 0 {
		t.Errorf("rejected: %+v, touched %+v", o, b.Touched())
	}
}

func mustParse(t *testing.T, raw string) sale.Record {
	t.Helper()
	r, err := sale.NewParser(acme).Parse([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestMergePanicsOnMixedSales(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("no panic")
		}
	}()
	sale.Merge([]sale.Record{mustParse(t, `{"sale_external_id": "A"}`), mustParse(t, `{"sale_external_id": "B"}`)})
}

// TestDecideAmountsNeverWrap: every amount Decide computes is exact, and a
// record whose figures leave int64 (the read model's bigint) is rejected,
// naming the field, instead of wrapping around.
func TestDecideAmountsNeverWrap(t *testing.T) {
	const max = "9223372036854775807"
	withTotals := func(totals map[string]int64, discount int64) *sale.State {
		s := stored()
		s.Totals, s.Discount = totals, discount
		return s
	}
	tests := []struct {
		name     string
		stored   *sale.State
		records  []string
		rejected map[int]string
		totals   map[string]int64 // the state saved, when not rejected
		discount int64
	}{
		{name: "two rows of one record over int64",
			records:  []string{`{` + head + `, "sale_rows": [{"product_id": "1", "quantity": 1, "unit_price": 5000000000000000000}, {"product_id": "2", "quantity": 1, "unit_price": 5000000000000000000}]}`},
			rejected: map[int]string{0: "sale_total"}},
		{name: "the record that goes over is rejected, the one before kept",
			records: []string{
				`{` + head + `, "product_id": "1", "quantity": 1, "unit_price": 5000000000000000000}`,
				`{"sale_external_id": "S", "product_id": "2", "quantity": 1, "unit_price": 5000000000000000000}`},
			rejected: map[int]string{1: "sale_total"},
			totals:   map[string]int64{"product:id:1#0": 5000000000000000000}},
		{name: "rows stored earlier count",
			stored:   withTotals(map[string]int64{"id:a": 5000000000000000000}, 0),
			records:  []string{`{"sale_external_id": "S", "product_id": "2", "quantity": 1, "unit_price": 5000000000000000000}`},
			rejected: map[int]string{0: "sale_total"}},
		{name: "a row replaced by key counts once",
			stored:  withTotals(map[string]int64{"id:a": 5000000000000000000}, 0),
			records: []string{`{"sale_external_id": "S", "external_id": "a", "product_id": "2", "quantity": 1, "unit_price": 5000000000000000000}`},
			totals:  map[string]int64{"id:a": 5000000000000000000}},
		{name: "a deleted row counts nothing",
			stored: withTotals(map[string]int64{"id:a": 5000000000000000000}, 0),
			records: []string{
				`{"sale_external_id": "S", "external_id": "a", "product_id": "2", "quantity": 1, "unit_price": 1, "is_deleted": true}`,
				`{"sale_external_id": "S", "product_id": "3", "quantity": 1, "unit_price": 5000000000000000000}`},
			totals: map[string]int64{"product:id:3#0": 5000000000000000000}},
		{name: "the sum may pass int64 on the way if the result fits",
			records: []string{`{` + head + `, "sale_rows": [{"product_id": "1", "quantity": 1, "unit_price": ` + max + `}, {"product_id": "2", "quantity": 1, "unit_price": 1}, {"product_id": "3", "quantity": -2, "unit_price": 1}]}`},
			totals:  map[string]int64{"product:id:1#0": 9223372036854775807, "product:id:2#0": 1, "product:id:3#0": -2}},
		{name: "negative totals minus the discount",
			records: []string{
				`{` + head + `, "sale_rows": [{"product_id": "1", "quantity": -1, "unit_price": ` + max + `}]}`,
				`{"sale_external_id": "S", "sale_discount": 2}`},
			rejected: map[int]string{1: "sale_total"},
			totals:   map[string]int64{"product:id:1#0": -9223372036854775807}},
		{name: "a stored discount counts",
			stored:   withTotals(nil, 9223372036854775807),
			records:  []string{`{"sale_external_id": "S", "product_id": "1", "quantity": -2, "unit_price": 1}`},
			rejected: map[int]string{0: "sale_total"}},
		{name: "a discount removed counts nothing",
			stored:   withTotals(map[string]int64{"id:a": -9223372036854775807}, 5),
			records:  []string{`{"sale_external_id": "S", "sale_discount": ""}`},
			totals:   map[string]int64{"id:a": -9223372036854775807},
			discount: 0},
		{name: "the checks hold with sale_total given",
			records:  []string{`{` + head + `, "sale_total": 10, "sale_rows": [{"product_id": "1", "quantity": 1, "total": ` + max + `}, {"product_id": "2", "quantity": 1, "total": 1}]}`},
			rejected: map[int]string{0: "sale_total"}},
		{name: "row total: unit_price × quantity",
			records:  []string{`{` + head + `, "product_id": "1", "quantity": 2, "unit_price": 5000000000000000000}`},
			rejected: map[int]string{0: "total"}},
		{name: "row total: minus the discount",
			records:  []string{`{` + head + `, "product_id": "1", "quantity": -1, "unit_price": ` + max + `, "discount": 2}`},
			rejected: map[int]string{0: "total"}},
		{name: "conversion with a rate below 1",
			records:  []string{`{` + head + `, "sale_currency": "USD", "sale_exchange_rate": 0.5, "product_id": "1", "quantity": 1, "unit_price_in_currency": 5000000000000000000}`},
			rejected: map[int]string{0: "unit_price_in_currency"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, o, rejected := decide(t, tt.stored, tt.records...)
			if diff := cmp.Diff(tt.rejected, rejected, cmpopts.EquateEmpty()); diff != "" {
				t.Fatalf("rejected (-want +got):\n%s", diff)
			}
			if tt.totals == nil {
				return
			}
			st, ok := b.State("S")
			if !ok || o.SaleID == "" {
				t.Fatalf("no sale decided: %+v", o)
			}
			if diff := cmp.Diff(tt.totals, st.Totals); diff != "" || st.Discount != tt.discount {
				t.Errorf("totals (-want +got):\n%s\ndiscount %d, want %d", diff, st.Discount, tt.discount)
			}
		})
	}
}

// TestParseAmountsFitInt64: an amount is an int64 as given, and a
// discount once its absolute value is taken (that of the smallest int64
// is not one).
func TestParseAmountsFitInt64(t *testing.T) {
	for raw, field := range map[string]string{
		`{"sale_external_id": "S", "product_id": "1", "quantity": 1, "unit_price": 1, "discount": -9223372036854775808}`: "discount",
		`{"sale_external_id": "S", "product_id": "1", "quantity": 1, "unit_price": 1, "discount": 9223372036854775808}`:  "discount",
		`{"sale_external_id": "S", "product_id": "1", "quantity": 1, "unit_price": 9223372036854775808}`:                 "unit_price",
		`{"sale_external_id": "S", "product_id": "1", "quantity": 1, "total": -9223372036854775809}`:                     "total",
	} {
		_, err := sale.NewParser(acme).Parse([]byte(raw))
		var prob *sale.Problem
		if !errors.As(err, &prob) || prob.Field != field {
			t.Errorf("Parse(%s) = %v, want a problem of %s", raw, err, field)
		}
	}
	r := mustParse(t, `{"sale_external_id": "S", "product_id": "1", "quantity": 1, "unit_price": 1, "discount": -9223372036854775807, "total": -9223372036854775808}`)
	if d, tot := r.Rows[0].Fields["discount"], r.Rows[0].Fields["total"]; d != int64(9223372036854775807) || tot != int64(-9223372036854775808) {
		t.Errorf("discount %v, total %v", d, tot)
	}
}

// TestRestoreKeepsTotals: a decision the write side undoes (Book.Restore)
// leaves the stored row totals as they were.
func TestRestoreKeepsTotals(t *testing.T) {
	s := stored()
	s.Totals = map[string]int64{"id:a": 5}
	b := sale.NewBook(func() string { return "new" }, acme)
	b.Load(*s)
	before, _ := b.State("S")
	if _, rej := b.Decide(sale.Merge([]sale.Record{mustParse(t, `{"sale_external_id": "S", "external_id": "a", "product_id": "1", "quantity": 1, "unit_price": 7}`)})); len(rej) != 0 {
		t.Fatal(rej)
	}
	if got, _ := b.State("S"); got.Totals["id:a"] != 7 {
		t.Fatalf("decided totals %v", got.Totals)
	}
	b.Restore("S", before, true)
	if got, _ := b.State("S"); got.Totals["id:a"] != 5 {
		t.Errorf("restored totals %v, want the stored 5", got.Totals)
	}
}
