package api

import (
	"bytes"
	"encoding/json"
	"testing"
)

// jsonbTexts are documents as PostgreSQL prints jsonb, with what
// encoding/json escapes.
var jsonbTexts = []string{
	`{}`,
	`[]`,
	`{"id": "0190a1", "tags": ["b2b", "vip"], "can_sms": false, "ACME__n": 1e-7, "x": null}`,
	`{"a": {"b": [1, 2.50, {"c": "d"}]}, "e": []}`,
	`{"note": "a <b> & c", "sep": "\u2028 and \u2029 ok", "esc": "q\"uo\\te\" \\\" <"}`,
	`{"ctl": "tab\there\nnl \u0001 \"", "k: ,": ", : {} []", "emoji": "😀 é"}`,
	`{"html&key<>": "x"}`,
	`"just a string with <script>"`,
	`12345678901234567890123456789`,
	`{"s": "\\"}`,
}

func TestAppendDocAsEncodingJSON(t *testing.T) {
	for _, doc := range jsonbTexts {
		want, err := json.Marshal(json.RawMessage(doc))
		if err != nil {
			t.Fatalf("%s: %v", doc, err)
		}
		if got := appendDoc(nil, []byte(doc)); string(got) != string(want) {
			t.Errorf("appendDoc(%s)\n got %s\nwant %s", doc, got, want)
		}
	}
}

func TestAppendJSONString(t *testing.T) {
	for _, s := range []string{"", "customers", "https://a.example/api/data/customers/?cursor=abc&limit=2", "ä<>\u2028\"\\\x01"} {
		want, _ := json.Marshal(s)
		if got := appendJSONString(nil, s); string(got) != string(want) {
			t.Errorf("appendJSONString(%q) = %s, want %s", s, got, want)
		}
	}
}

// benchCustomer is a customer as PostgreSQL prints it.
var benchCustomer = []byte(`{"id": "019a6f3c2b7e7d1f8c0e4a5b6c7d8e9f", "tags": ["b2b", "vip"], "email": "ann.anderson.1234@example.com", "can_sms": false, "country": "FI", "can_post": false, "can_push": false, "zip_code": "00100", "can_email": true, "last_name": "Anderson", "ACME__tier": 3, "birth_date": "1980-02-03", "first_name": "Ann", "is_deleted": false, "can_profile": false, "date_joined": "2024-05-06T04:08:09Z", "external_id": "C-1234", "is_forgotten": false, "phone_number": "+358401234567", "mailing_lists": ["weekly"], "street_address": "Mannerheimintie 12 B 34", "customer_token": "Qk3n0cT1x8mZr5Yp2Lw9Vb"}`)

// BenchmarkAppendDoc writes a customer as PostgreSQL prints it.
func BenchmarkAppendDoc(b *testing.B) {
	doc := benchCustomer
	b.SetBytes(int64(len(doc)))
	var dst []byte
	for b.Loop() {
		dst = appendDoc(dst[:0], doc)
	}
}

// BenchmarkAppendDocStandardLibrary is the baseline of BenchmarkAppendDoc:
// the same output from encoding/json's json.Compact then json.HTMLEscape,
// which appendDoc replaces on the paging path (docs/benchmarks.md).
func BenchmarkAppendDocStandardLibrary(b *testing.B) {
	b.SetBytes(int64(len(benchCustomer)))
	var compact, escaped bytes.Buffer
	for b.Loop() {
		compact.Reset()
		escaped.Reset()
		if err := json.Compact(&compact, benchCustomer); err != nil {
			b.Fatal(err)
		}
		json.HTMLEscape(&escaped, compact.Bytes())
	}
}
