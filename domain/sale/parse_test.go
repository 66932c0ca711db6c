package sale_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/clientele/clientele/domain/company"
	"github.com/clientele/clientele/domain/product"
	"github.com/clientele/clientele/domain/sale"
	"github.com/clientele/clientele/domain/values"
)

// acme is the company of the tests: EUR, Helsinki time, a SEK rate.
var acme = company.Company{ID: "c1", Currency: "EUR", ShortName: "ACME", Timezone: "Europe/Helsinki",
	ExchangeRates: map[string]string{"SEK": "11.50"}}

func num(s string) json.Number { return json.Number(s) }

func TestParse(t *testing.T) {
	p := sale.NewParser(acme)
	tests := []struct {
		name, in string
		want     sale.Record
		field    string // the rejected field; "-" for a rejection without one
		txField  string // the field of Record.TxProblem
	}{
		{name: "flat row with transaction fields, normalised",
			in: `{"sale_external_id": 1001, "sale_date": "2026-07-01 12:00:00", "sale_currency": "usd", "sale_exchange_rate": "1.0800",
				"sale_state": "processing", "sale_tags": ["b", "a", "b"], "sale_payment_method": "card", "sale_coupon_codes": ["X", 7],
				"sale_email": "Ann@Example.COM", "sale_phone_number": "+358 40 1234567", "sale_customer_id": 55,
				"sale_country": "uk", "sale_customer_language": "en_US", "sale_customer_can_email": "TRUE", "sale_customer_can_sms": "",
				"sale_discount": -50, "sale_shipping": "490.00", "sale_total": 1000.0, "sale_is_deleted": "0",
				"sale_conversion_url": "https://shop.example.com/thanks", "sale_shipping_method": "",
				"product_id": 55, "quantity": "2.50", "unit_price": "1000", "discount": -100, "tags": ["z", "a"],
				"product_brand": "Acme", "product_category": ["shoes", "men"], "unit": "pcs", "is_deleted": false}`,
			want: sale.Record{ExternalID: "1001",
				Tx: map[string]any{"sale_date": "2026-07-01T09:00:00Z", "sale_currency": "USD", "sale_exchange_rate": "1.08",
					"sale_state": "PROCESSING", "sale_tags": []string{"a", "b"}, "sale_payment_method": []string{"card"},
					"sale_coupon_codes": []string{"X", "7"}, "sale_email": "ann@example.com", "sale_phone_number": "+358401234567",
					"sale_customer_id": "55", "sale_country": "GB", "sale_customer_language": "en", "sale_customer_can_email": true,
					"sale_customer_can_sms": "", "sale_discount": int64(50), "sale_shipping": int64(490), "sale_total": int64(1000),
					"sale_is_deleted": false, "sale_conversion_url": "https://shop.example.com/thanks", "sale_shipping_method": ""},
				Rows: []sale.RowRecord{{
					Fields: map[string]any{"product_id": "55", "quantity": num("2.5"), "unit_price": int64(1000), "discount": int64(100),
						"tags": []string{"a", "z"}, "product_brand": "Acme", "product_category": []string{"shoes", "men"}, "unit": "pcs", "is_deleted": false},
					Product: product.Ref{ExternalID: "55", Details: map[string]any{"brand": "Acme", "category": []string{"shoes", "men"}}},
				}}}},
		{name: "only transaction fields: no row",
			in:   `{"sale_external_id": "S", "sale_date": "2026-01-01", "product_id": "", "quantity": ""}`,
			want: sale.Record{ExternalID: "S", Tx: map[string]any{"sale_date": "2025-12-31T22:00:00Z"}}},
		{name: "nested",
			in: `{"sale_external_id": "S", "sale_email": "a@b.fi", "sale_rows": [
				{"product_sku": "K1", "quantity": 1, "unit_price": 10},
				{"ean": 6400000000001, "external_id": "r2", "quantity": 0.003, "unit_price_in_currency": 5}]}`,
			want: sale.Record{ExternalID: "S", Nested: true, Tx: map[string]any{"sale_email": "a@b.fi"}, Rows: []sale.RowRecord{
				{Fields: map[string]any{"product_sku": "K1", "quantity": num("1"), "unit_price": int64(10)}, Product: product.Ref{SKU: "K1"}},
				{Fields: map[string]any{"ean": "6400000000001", "external_id": "r2", "quantity": num("0"), "unit_price_in_currency": int64(5)},
					Product: product.Ref{EAN: "6400000000001"}},
			}}},
		{name: "quantity half away from zero", in: `{"sale_external_id": "S", "product_id": "p", "quantity": "-0.005"}`,
			want: sale.Record{ExternalID: "S", Tx: map[string]any{}, Rows: []sale.RowRecord{
				{Fields: map[string]any{"product_id": "p", "quantity": num("-0.01")}, Product: product.Ref{ExternalID: "p"}}}}},
		{name: "quantity half up", in: `{"sale_external_id": "S", "product_id": "p", "quantity": 0.005}`,
			want: sale.Record{ExternalID: "S", Tx: map[string]any{}, Rows: []sale.RowRecord{
				{Fields: map[string]any{"product_id": "p", "quantity": num("0.01")}, Product: product.Ref{ExternalID: "p"}}}}},
		{name: "quantity as a double", in: `{"sale_external_id": "S", "product_id": "p", "quantity": 1000.0}`,
			want: sale.Record{ExternalID: "S", Tx: map[string]any{}, Rows: []sale.RowRecord{
				{Fields: map[string]any{"product_id": "p", "quantity": num("1000")}, Product: product.Ref{ExternalID: "p"}}}}},
		{name: "company field of a flat row is the transaction's",
			in: `{"sale_external_id": "S", "acme__channel": "web", "ACME__old": "", "product_id": "p", "quantity": 1}`,
			want: sale.Record{ExternalID: "S", Tx: map[string]any{"ACME__channel": "web", "ACME__old": ""}, Rows: []sale.RowRecord{
				{Fields: map[string]any{"product_id": "p", "quantity": num("1")}, Product: product.Ref{ExternalID: "p"}}}}},
		{name: "company field of a nested row is the transaction's",
			in: `{"sale_external_id": "S", "ACME__channel": "shop", "sale_rows": [{"ACME__channel": "web", "product_id": "p", "quantity": 1}]}`,
			want: sale.Record{ExternalID: "S", Nested: true, Tx: map[string]any{"ACME__channel": "web"}, Rows: []sale.RowRecord{
				{Fields: map[string]any{"product_id": "p", "quantity": num("1")}, Product: product.Ref{ExternalID: "p"}}}}},

		{name: "no sale_external_id", in: `{"product_id": "p", "quantity": 1}`, field: "sale_external_id"},
		{name: "blank sale_external_id", in: `{"sale_external_id": " "}`, field: "sale_external_id"},
		{name: "not an object", in: `[1]`, field: "-"},
		{name: "unknown fields ignored", in: `{"sale_external_id": "S", "colour": "red", "sale_curency": "USD", "OTHER__x": 1, "acme__": 2, "store_id": null}`,
			want: sale.Record{ExternalID: "S", Tx: map[string]any{}, Ignored: values.Ignored{"OTHER__x", "acme__", "colour", "sale_curency"}}},
		{name: "unquotable key ignored unnamed", in: `{"sale_external_id": "S", "Ann Smith <ann@x.fi>": 1, "product_id": "p", "quantity": 1}`,
			want: sale.Record{ExternalID: "S", Tx: map[string]any{}, Ignored: values.Ignored{values.UnnamedField}, Rows: []sale.RowRecord{
				{Fields: map[string]any{"product_id": "p", "quantity": num("1")}, Product: product.Ref{ExternalID: "p"}}}}},
		{name: "unknown fields of nested rows are one name each, whatever the row",
			in: `{"sale_external_id": "S", "store_id": 1, "sale_rows": [{"product_id": "p", "quantity": 1, "store_id": 1, "mage_type": "simple"},
				{"product_id": "q", "quantity": 2, "store_id": 1, "sale_foo": 1, "OTHER__x": 1, "Ann Smith": 1}]}`,
			want: sale.Record{ExternalID: "S", Nested: true, Tx: map[string]any{},
				Ignored: values.Ignored{values.UnnamedField, "sale_rows.OTHER__x", "sale_rows.mage_type", "sale_rows.sale_foo", "sale_rows.store_id", "store_id"},
				Rows: []sale.RowRecord{
					{Fields: map[string]any{"product_id": "p", "quantity": num("1")}, Product: product.Ref{ExternalID: "p"}},
					{Fields: map[string]any{"product_id": "q", "quantity": num("2")}, Product: product.Ref{ExternalID: "q"}}}}},
		{name: "bad row value beside an unknown field", in: `{"sale_external_id": "S", "sale_rows": [{"product_id": "p", "quantity": "x", "store_id": 1}]}`,
			field: "sale_rows.0.quantity"},
		{name: "row without product", in: `{"sale_external_id": "S", "quantity": 1, "unit_price": 5}`, field: "product_id"},
		{name: "row without quantity", in: `{"sale_external_id": "S", "product_id": "p", "unit_price": 5}`, field: "quantity"},
		{name: "nested row without quantity", in: `{"sale_external_id": "S", "sale_rows": [{"product_id": "p", "quantity": 1}, {"product_id": "p"}]}`,
			field: "sale_rows.1.quantity"},
		{name: "nested empty row", in: `{"sale_external_id": "S", "sale_rows": [{}]}`, field: "sale_rows.0.product_id"},
		{name: "nested row not an object", in: `{"sale_external_id": "S", "sale_rows": ["x"]}`, field: "sale_rows.0"},
		{name: "sale_rows not a list", in: `{"sale_external_id": "S", "sale_rows": {"product_id": "p"}}`, field: "sale_rows"},
		{name: "transaction field in a nested row", in: `{"sale_external_id": "S", "sale_rows": [{"product_id": "p", "quantity": 1, "sale_date": "2026-01-01"}]}`,
			field: "sale_rows.0.sale_date"},
		{name: "row field beside sale_rows", in: `{"sale_external_id": "S", "product_id": "p", "sale_rows": [{"product_id": "p", "quantity": 1}]}`,
			field: "product_id"},
		{name: "customer field in a nested row", in: `{"sale_external_id": "S", "sale_rows": [{"product_id": "p", "quantity": 1, "sale_email": "a@example.com"}]}`,
			field: "sale_rows.0.sale_email"},
		{name: "fraction of a minor unit", in: `{"sale_external_id": "S", "product_id": "p", "quantity": 1, "unit_price": "10.50"}`, field: "unit_price"},
		{name: "negative unit price", in: `{"sale_external_id": "S", "product_id": "p", "quantity": 1, "unit_price": -1}`, field: "unit_price"},
		{name: "quantity not a number", in: `{"sale_external_id": "S", "product_id": "p", "quantity": "1,5"}`, field: "quantity"},
		{name: "quantity with a huge exponent", in: `{"sale_external_id": "S", "product_id": "p", "quantity": 1e999999999}`, field: "quantity"},
		{name: "bad product detail named as the row field", in: `{"sale_external_id": "S", "product_id": "p", "quantity": 1, "product_title": true}`,
			field: "product_title"},

		{name: "unknown sale_state", in: `{"sale_external_id": "S", "sale_state": "SHIPPED"}`, txField: "sale_state"},
		{name: "sale_state not a string", in: `{"sale_external_id": "S", "sale_state": 1}`, txField: "sale_state"},
		{name: "an email address as sale_customer_id is a guest's, and the sale_email",
			in:   `{"sale_external_id": "S", "sale_customer_id": "Sanna.Guest@Example.com"}`,
			want: sale.Record{ExternalID: "S", Tx: map[string]any{"sale_email": "sanna.guest@example.com"}}},
		{name: "an email address as sale_customer_id beside a sale_email",
			in:   `{"sale_external_id": "S", "sale_customer_id": "old@example.com", "sale_email": "New@example.com"}`,
			want: sale.Record{ExternalID: "S", Tx: map[string]any{"sale_email": "new@example.com"}}},
		{name: "an email address as sale_customer_id beside a blank sale_email",
			in:   `{"sale_external_id": "S", "sale_customer_id": "guest@example.com", "sale_email": ""}`,
			want: sale.Record{ExternalID: "S", Tx: map[string]any{"sale_email": "guest@example.com"}}},
		{name: "a national phone number in the record's sale_country",
			in:   `{"sale_external_id": "S", "sale_phone_number": "045 678 9012", "sale_country": "fi"}`,
			want: sale.Record{ExternalID: "S", Tx: map[string]any{"sale_phone_number": "+358456789012", "sale_country": "FI"}}},
		{name: "an international number whatever the sale_country",
			in:   `{"sale_external_id": "S", "sale_phone_number": "+46 70 123 45 67", "sale_country": "FI"}`,
			want: sale.Record{ExternalID: "S", Tx: map[string]any{"sale_phone_number": "+46701234567", "sale_country": "FI"}}},
		{name: "a blank customer field is kept as \"\"",
			in:   `{"sale_external_id": "S", "sale_phone_number": "", "sale_customer_can_email": " "}`,
			want: sale.Record{ExternalID: "S", Tx: map[string]any{"sale_phone_number": "", "sale_customer_can_email": ""}}},
		{name: "a national phone number invalid in the sale_country",
			in: `{"sale_external_id": "S", "sale_phone_number": "040 12", "sale_country": "FI"}`, txField: "sale_phone_number"},
		{name: "a national phone number beside a bad sale_country", in: `{"sale_external_id": "S", "sale_phone_number": "040 987 6543", "sale_country": "XX"}`,
			txField: "sale_country"},
		{name: "sale_customer_id neither an id nor an address", in: `{"sale_external_id": "S", "sale_customer_id": "a@b"}`, txField: "sale_customer_id"},
		{name: "sale_date cannot be removed", in: `{"sale_external_id": "S", "sale_date": ""}`, txField: "sale_date"},
		{name: "bad sale_date", in: `{"sale_external_id": "S", "sale_date": "01.07.2026"}`, txField: "sale_date"},
		{name: "customer problem named as the sale field", in: `{"sale_external_id": "S", "sale_email": "not an address"}`, txField: "sale_email"},
		{name: "phone without country", in: `{"sale_external_id": "S", "sale_phone_number": "040 1234567"}`, txField: "sale_phone_number"},
		{name: "customer id with spaces", in: `{"sale_external_id": "S", "sale_customer_id": "a b"}`, txField: "sale_customer_id"},
		{name: "bad country", in: `{"sale_external_id": "S", "sale_country": "XX"}`, txField: "sale_country"},
		{name: "rate not positive", in: `{"sale_external_id": "S", "sale_exchange_rate": 0}`, txField: "sale_exchange_rate"},
		{name: "relative conversion url", in: `{"sale_external_id": "S", "sale_conversion_url": "/thanks"}`, txField: "sale_conversion_url"},
		{name: "negative shipping", in: `{"sale_external_id": "S", "sale_shipping": -1}`, txField: "sale_shipping"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := p.Parse([]byte(tt.in))
			var prob *sale.Problem
			switch {
			case tt.field == "" && err != nil:
				t.Fatalf("rejected: %v", err)
			case tt.field != "" && !errors.As(err, &prob):
				t.Fatalf("accepted %+v, want a rejection of %s", got, tt.field)
			case tt.field != "":
				if f := map[bool]string{true: "-", false: prob.Field}[prob.Field == ""]; f != tt.field {
					t.Errorf("rejected field %q (%v), want %q", f, err, tt.field)
				}
			case tt.txField != "":
				if got.TxProblem == nil || got.TxProblem.Field != tt.txField {
					t.Errorf("TxProblem %v, want one of %s", got.TxProblem, tt.txField)
				}
			default:
				if diff := cmp.Diff(tt.want, got, cmpopts.EquateEmpty()); diff != "" {
					t.Errorf("(-want +got):\n%s", diff)
				}
			}
		})
	}
}

func TestProblemNeverQuotesTheValue(t *testing.T) {
	p := sale.NewParser(acme)
	secret := "ann.secret@example"
	r, err := p.Parse([]byte(`{"sale_external_id": "S", "sale_email": "` + secret + `"}`))
	if err != nil || r.TxProblem == nil {
		t.Fatalf("want a TxProblem: %v %+v", err, r)
	}
	if msg := r.TxProblem.Error(); strings.Contains(msg, secret) {
		t.Errorf("reason quotes the value: %s", msg)
	}
	if r, err := p.Parse([]byte(`{"sale_external_id": "S", "Ann Smith <ann@x.fi>": 1}`)); err != nil || strings.Contains(fmt.Sprint(r), "Ann") {
		t.Errorf("an unquotable key is quoted, or rejects: %+v %v", r, err)
	}
}

// TestParsePhoneRegion: a sale_phone_number without + is read in the
// record's sale_country, else in the company's phone_region; without
// either it is refused, as in a customer record.
func TestParsePhoneRegion(t *testing.T) {
	fi := acme
	fi.PhoneRegion = "FI"
	tests := []struct {
		name string
		c    company.Company
		in   string
		want string // sale_phone_number; "" for a TxProblem of it
	}{
		{"company region", fi, `"sale_phone_number": "045 678 9012"`, "+358456789012"},
		{"the record's country wins", fi, `"sale_phone_number": "070-123 45 67", "sale_country": "SE"`, "+46701234567"},
		{"international form whatever the region", fi, `"sale_phone_number": "+44 20 7946 0958"`, "+442079460958"},
		{"invalid in the region", fi, `"sale_phone_number": "045 67"`, ""},
		{"no region", acme, `"sale_phone_number": "045 678 9012"`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := sale.NewParser(tt.c).Parse([]byte(`{"sale_external_id": "S", ` + tt.in + `}`))
			if err != nil {
				t.Fatal(err)
			}
			if tt.want == "" {
				if r.TxProblem == nil || r.TxProblem.Field != "sale_phone_number" {
					t.Errorf("TxProblem %v, want one of sale_phone_number", r.TxProblem)
				}
				return
			}
			if r.TxProblem != nil || r.Tx["sale_phone_number"] != tt.want {
				t.Errorf("sale_phone_number %v (%v), want %s", r.Tx["sale_phone_number"], r.TxProblem, tt.want)
			}
		})
	}
}
