package ingest_test

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/clientele/clientele/domain/activity"
	"github.com/clientele/clientele/domain/company"
	"github.com/clientele/clientele/domain/customer"
	"github.com/clientele/clientele/domain/importing"
	"github.com/clientele/clientele/domain/product"
	"github.com/clientele/clientele/domain/sale"
	"github.com/clientele/clientele/domain/shop"
	"github.com/clientele/clientele/internal/ingest"
)

var fuzzCompany = company.Company{ID: "c1", ShortName: "ACME", Timezone: "Europe/Helsinki", Currency: "EUR",
	CustomEventTypes: []string{"QUIZ_DONE"}, ExchangeRates: map[string]string{"SEK": "11.50"}}

// parsers are the record parsers of the entities, returning a record as
// any: what a CSV form and a JSON form of one record must agree on.
var parsers = map[importing.Entity]func([]byte) (any, error){
	importing.Customers: func(b []byte) (any, error) { return customer.NewParser(fuzzCompany).Parse(b) },
	importing.Products:  func(b []byte) (any, error) { return product.NewParser(fuzzCompany).Parse(b) },
	importing.Events:    func(b []byte) (any, error) { return activity.NewParser(fuzzCompany).Parse(b) },
	importing.Sales:     func(b []byte) (any, error) { return sale.NewParser(fuzzCompany).Parse(b) },
	importing.Shops:     func(b []byte) (any, error) { return shop.NewParser(fuzzCompany).Parse(b) },
}

// FuzzCSVAgreesWithJSON checks that a record says the same as CSV and as
// JSON: a JSON record the entity's parser accepts, written as a CSV line
// under property-path columns (lists as "tags.0", products' versions and
// stock as "versions.shop_id.7.price" and "stock.0.quantity", numbers and
// booleans as text), is read by the CSV reader into a record the parser
// accepts as the same record. What CSV cannot say is left out of both:
// "" (absent in CSV, a removal in JSON), null, empty lists and objects,
// company fields (kept as sent, so a number stays a number only in
// JSON), objects outside the nested roots, keys that are no path segment.
func FuzzCSVAgreesWithJSON(f *testing.F) {
	seeds := map[importing.Entity][]string{
		importing.Customers: {`{"external_id": 12, "email": "Ann@Example.COM", "can_email": true, "tags": ["b", "a"], "mailing_lists.add": "n",
			"date_joined": "2024-07-01 12:00:00", "zip_code": 2100, "ACME__x": 1, "first_name": ""}`},
		importing.Products: {`{"external_id": "p1", "price": 1050.0, "visible": false, "category": ["x", "y"], "stock": [{"shop_id": "s1", "quantity": 2.5}],
			"versions": {"language": {"fi": {"title": "Kenkä", "images": ["a", "b"]}}, "shop_id": {"s1": {"price": 990}}}}`,
			`{"external_id": "p2", "price": 100, "versions": {"shop_id": {"7": {"price": 990, "currency": "sek"}}}}`},
		importing.Events: {`{"type": "BASKET_ADD", "date": "2024-07-01T12:00:00Z", "customer_id": 55, "product_id": 9, "product_price": "1050",
			"product_category": ["Home"], "tags": ["b", "a"], "sentiment_value": 7}`, `{"id": 12, "is_deleted": true}`},
		importing.Sales: {`{"sale_external_id": "S1", "sale_date": "2026-07-01", "sale_customer_id": "C1", "sale_customer_can_email": true,
			"sale_rows": [{"product_id": "p1", "quantity": 0.005, "unit_price": 1150}, {"product_sku": "K", "quantity": -1, "total": -10}]}`},
		importing.Shops: {`{"external_id": 7, "name": "Main", "is_hidden": true, "country": "fi", "shop_type": "ONLINE"}`},
	}
	for i, e := range entities {
		for _, s := range seeds[e] {
			f.Add([]byte(s), uint8(i), uint8(i))
		}
	}
	f.Fuzz(func(t *testing.T, raw []byte, e, delim uint8) {
		entity := entities[int(e)%len(entities)]
		parse := parsers[entity]
		var rec map[string]any
		d := json.NewDecoder(bytes.NewReader(raw))
		d.UseNumber()
		if d.Decode(&rec) != nil || rec == nil {
			return
		}
		nested := map[string]bool{}
		if entity == importing.Products {
			nested = map[string]bool{product.FieldVersions: true, product.FieldStock: true}
		}
		for k, v := range rec {
			_, isObject := v.(map[string]any)
			if (isObject && !nested[k]) || !topKey(k, nested) {
				delete(rec, k)
			}
		}
		cleaned, ok := clean(rec).(map[string]any)
		if !ok {
			return
		}
		asJSON, _ := json.Marshal(cleaned)
		want, err := parse(asJSON)
		if err != nil {
			return
		}
		var names, cells []string
		if !flatten(cleaned, "", &names, &cells) {
			return
		}
		comma := []rune{',', ';', '\t'}[int(delim)%3]
		var body bytes.Buffer
		for i, n := range names {
			if i > 0 {
				body.WriteRune(comma)
			}
			body.WriteString(`"` + strings.ReplaceAll(n, `"`, `""`) + `"`)
		}
		body.WriteString("\n")
		w := csv.NewWriter(&body)
		w.Comma = comma
		_ = w.Write(cells)
		w.Flush()
		records, err := readAll(t, bytes.NewReader(body.Bytes()), ingest.CSV, "", entity, ingest.Limits{})
		if err != nil || len(records) != 1 {
			t.Fatalf("JSON %s as CSV %q gives %q, %v", asJSON, body.Bytes(), records, err)
		}
		got, err := parse([]byte(records[0]))
		if err != nil {
			t.Fatalf("JSON %s is accepted, as CSV %q (read as %s) refused: %v", asJSON, body.Bytes(), records[0], err)
		}
		if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("JSON %s and as CSV %q (read as %s) are other records (-JSON +CSV):\n%s", asJSON, body.Bytes(), records[0], diff)
		}
	})
}

// topKey reports whether a record's key can be a CSV column's first
// segment: no spaces around it, no company field, and no path of its own
// (a numeric segment, or a nested root before a dot).
func topKey(k string, nested map[string]bool) bool {
	segs := strings.Split(k, ".")
	if k == "" || k != strings.TrimSpace(k) || strings.Contains(k, "__") || len(segs) > 1 && nested[segs[0]] {
		return false
	}
	for _, s := range segs[1:] {
		if s != "" && strings.Trim(s, "0123456789") == "" {
			return false
		}
	}
	return true
}

// clean drops from a decoded value what CSV cannot say: nulls, "", company
// fields, and the lists and objects left empty; nil when nothing is left.
func clean(v any) any {
	switch v := v.(type) {
	case nil:
		return nil
	case string:
		if v == "" || strings.Contains(v, "\r") {
			return nil // absent, or a line break encoding/csv reads as LF
		}
	case []any:
		var out []any
		for _, e := range v {
			if c := clean(e); c != nil {
				out = append(out, c)
			}
		}
		if len(out) == 0 {
			return nil
		}
		return out
	case map[string]any:
		out := map[string]any{}
		for k, e := range v {
			if c := clean(e); c != nil && !strings.Contains(k, "__") {
				out[k] = c
			}
		}
		if len(out) == 0 {
			return nil
		}
		return out
	}
	return v
}

// flatten appends the columns and cells of a cleaned value at path; false
// when a key below the top cannot be a path segment (empty, with a dot or
// spaces where the header's are trimmed).
func flatten(v any, path string, names, cells *[]string) bool {
	join := func(seg string) string {
		if path == "" {
			return seg
		}
		return path + "." + seg
	}
	switch v := v.(type) {
	case []any:
		for i, e := range v {
			if !flatten(e, join(strconv.Itoa(i)), names, cells) {
				return false
			}
		}
	case map[string]any:
		for k, e := range v {
			if path != "" && (k == "" || strings.Contains(k, ".") || k != strings.TrimSpace(k)) {
				return false
			}
			if !flatten(e, join(k), names, cells) {
				return false
			}
		}
	case string:
		*names, *cells = append(*names, path), append(*cells, v)
	case json.Number:
		*names, *cells = append(*names, path), append(*cells, v.String())
	case bool:
		*names, *cells = append(*names, path), append(*cells, strconv.FormatBool(v))
	}
	return true
}
