package product_test

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/clientele/clientele/domain/company"
	"github.com/clientele/clientele/domain/fuzzcheck"
	"github.com/clientele/clientele/domain/product"
	"github.com/clientele/clientele/domain/values"
)

var fuzzCompany = company.Company{ID: "c1", ShortName: "ACME", Timezone: "Europe/Helsinki"}

// FuzzParse checks the record parser on any bytes: a refusal is a
// *Problem, and an accepted record has its external_id, encodes to valid
// JSON without U+0000, and is its own normal form: written back as an
// import record (versions and stock included), it parses to the same
// record (idempotence).
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		`{"external_id": 55, "price": "1050.00", "sale_price": 990.0, "currency": "sek", "date": "2024-01-01 12:00:00",
			"category": ["x", ""], "tags": ["b", "a", "a"], "images": ["b", "a"], "visible": "0", "language": "fi-FI",
			"url": " https://shop.example.com/p/55 ", "salerow_priority": "4", "recommendation_freq_days": "1.5e1"}`,
		`{"external_id": "p1", "price": 100, "stock": [{"shop_id": "s1", "quantity": "2"}, {"shop_id": 7, "quantity": 1e2}, null]}`,
		`{"external_id": "p1", "versions": {"language": {"FI": {"title": "Kenkä", "price": 10}, "fi": {"url": ""}},
			"shop_id": {" s1 ": {"price": "20", "currency": "eur"}, "7": null}}}`,
		`{"external_id": "p1", "stock": "", "versions": "", "title": "", "description": null}`,
		`{"external_id": "p1", "store_id": 1, "mage_child_ids": [2, 3], "OTHER__x": 1, "Ann Smith": 2, "stock": [{"shop_id": "s1", "quantity": 1, "store_id": 1}],
			"versions": {"language": {"fi": {"title": "T", "store_id": 1}}, "store": {"1": {"title": "T"}}}}`,
		`{"external_id": "p1", "price": ""}`, `{"external_id": "p1", "versions": {"language": {"fi": {"is_deleted": true}}}}`,
		`{"external_id": "p1", "recommendation_set_ids": ["1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11", "12", "13", "14", "15", "16", "17", "18", "19", "20", "21"]}`,
	} {
		f.Add([]byte(s))
	}
	p := product.NewParser(fuzzCompany)
	f.Fuzz(func(t *testing.T, raw []byte) {
		if _, _, reason := values.DecodeRecord(raw); reason != "" {
			return // FuzzDecodeRecord's (domain/values) to check
		}
		r, err := p.Parse(raw)
		if err != nil {
			fuzzcheck.Rejection(t, err)
			return
		}
		fuzzcheck.JSON(t, "changes", r.Changes)
		fuzzcheck.Ignored(t, r.Ignored)
		fuzzcheck.Text(t, "external_id", r.ExternalID)
		if r.ExternalID == "" {
			t.Fatal("accepted without an external_id")
		}
		if l, _ := r.Changes.Set[product.FieldLanguage].(string); l != r.Language {
			t.Fatalf("Language is %q, but the record sets %q", r.Language, l)
		}
		again, err := p.Parse(fuzzcheck.JSON(t, "normal form", normalForm(r)))
		if err != nil {
			t.Fatalf("the normal form of %s is refused: %v", raw, err)
		}
		r.Ignored = nil // the normal form holds fields only
		if diff := cmp.Diff(r, again, cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("the normal form of %s parses to another record (-first +again):\n%s", raw, diff)
		}
	})
}

// normalForm writes a parsed record back as an import record.
func normalForm(r product.Record) map[string]any {
	m := fieldsForm(product.FieldChanges{Set: r.Changes.Set, Unset: r.Changes.Unset})
	m[product.FieldExternalID] = r.ExternalID
	if len(r.Changes.Stock) > 0 {
		m[product.FieldStock] = r.Changes.Stock
	}
	if len(r.Changes.Versions) > 0 {
		versions := map[string]any{}
		for dim, byKey := range r.Changes.Versions {
			d := map[string]any{}
			for key, c := range byKey {
				d[key] = fieldsForm(c)
			}
			versions[dim] = d
		}
		m[product.FieldVersions] = versions
	}
	return m
}

func fieldsForm(c product.FieldChanges) map[string]any {
	m := map[string]any{}
	for k, v := range c.Set {
		m[k] = v
	}
	for _, k := range c.Unset {
		m[k] = ""
	}
	return m
}

// FuzzMoney checks amounts, as a string (CSV) and as a JSON number: an
// accepted price is the whole number of cents the client wrote in decimal
// (nothing else is money), and it round-trips: its text, as a string or
// a number, is accepted as the same price.
func FuzzMoney(f *testing.F) {
	for _, s := range []string{"1050", "1050.0", " 1050.00 ", "10.5", "-5", "21/2", "1e3", "1E+02", ".5e1", "5.",
		"9223372036854775807", "9223372036854775808", "1e999999", "NaN", "0"} {
		f.Add(s)
	}
	p := product.NewParser(fuzzCompany)
	price := func(v any) (int64, error) {
		raw, _ := json.Marshal(map[string]any{product.FieldExternalID: "p", product.FieldPrice: v})
		r, err := p.Parse(raw)
		if err != nil {
			return 0, err
		}
		n, ok := r.Changes.Set[product.FieldPrice].(int64)
		if !ok {
			return 0, &product.Problem{Field: "price", Reason: "not an int64"}
		}
		return n, nil
	}
	f.Fuzz(func(t *testing.T, s string) {
		forms := []any{s}
		if json.Valid([]byte(s)) {
			if _, err := strconv.ParseFloat(s, 64); err == nil {
				forms = append(forms, json.Number(s))
			}
		}
		for _, v := range forms {
			n, err := price(v)
			if err != nil {
				fuzzcheck.Rejection(t, err)
				continue
			}
			if !fuzzcheck.Decimal(s) {
				t.Fatalf("price %q (%T) is accepted as %d, but it is no decimal number", s, v, n)
			}
			if fl, err := strconv.ParseFloat(strings.TrimSpace(s), 64); n < 0 || err == nil && math.Abs(fl-float64(n)) > math.Abs(fl)*1e-15 {
				t.Fatalf("price %q (%T) is accepted as %d", s, v, n)
			}
			text := strconv.FormatInt(n, 10)
			for _, back := range []any{text, json.Number(text), text + ".00"} {
				if again, err := price(back); again != n || err != nil {
					t.Fatalf("price %q is %d, but %q (%T) is %d %v", s, n, back, back, again, err)
				}
			}
		}
	})
}
