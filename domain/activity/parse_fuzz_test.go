package activity_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/clientele/clientele/domain/activity"
	"github.com/clientele/clientele/domain/fuzzcheck"
	"github.com/clientele/clientele/domain/values"
)

// FuzzParse checks the event parser on any bytes: a refusal is a
// *Problem, and an accepted record (an event or a deletion) encodes to
// valid JSON without U+0000, has a date in the stored form, and is its
// own normal form: its fields, personal fields and removals written back
// as an event record parse to the same record (idempotence). Its numbers
// (id, sentiment_value) are decimal numbers as sent.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		`{"type": "MAIL_SUBSCRIBE", "date": "2024-07-01 12:00:00", "email": " Ann@Example.COM ", "phone_number": "+358 40 1234567",
			"country": "uk", "language": "en_US", "first_name": "Ann", "mailing_lists": ["news", "offers"], "tags": ["b", "a", "b"]}`,
		`{"type": "MAIL_UNSUBSCRIBE", "date": "2024-07-01T12:00:00Z", "customer_id": "C-1", "mailing_lists": ["_"], "last_name": ""}`,
		`{"type": "BASKET_ADD", "date": "2024-07-01T12:00:00Z", "customer_id": 55, "product_id": 9, "sku": "S-9", "product_sku": " S-9",
			"product_ean": 6410405082657, "product_title": "Mug", "title": "Mug", "product_price": "1050.00", "product_currency": "eur",
			"product_category": ["Home", "Kitchen"], "product_url": "https://shop.test/mug", "product_image": "/mug.jpg"}`,
		`{"type": "QUIZ_DONE", "date": "2024-07-01", "email": "a@example.com", "acme__score": 7, "ACME__tags": ["x"]}`,
		`{"type": "SENTIMENT", "date": "2024-07-01T12:00:00+05:45", "phone_number": "+358401234567", "sentiment_value": "7.0", "customer_token": " t "}`,
		`{"type": "BROWSE", "date": "2024-07-01T12:00:00Z", "customer_token": "t", "label": "x"}`,
		`{"id": 12, "is_deleted": "true"}`, `{"id": 12}`, `{"type": "browse", "date": "2024-07-01"}`,
		`{"type": "BROWSE", "date": "2024-07-01", "customer_id": "C-1", "label": "x", "store_id": 1, "OTHER__x": 2, "Ann Smith": 3}`,
	} {
		f.Add([]byte(s))
	}
	p := activity.NewParser(acme)
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
		sent, _, _ := values.DecodeRecord(raw)
		for _, k := range []string{"id", "sentiment_value"} {
			if s, ok := values.Scalar(sent[k]); ok && !values.Blank(s) && !fuzzcheck.Decimal(s) {
				t.Fatalf("%s %q is accepted, but it is no decimal number", k, s)
			}
		}
		if r.DeleteID < 0 || (r.DeleteID == 0) == (r.Type == "") {
			t.Fatalf("accepted a record that is neither an event nor a deletion: %+v", r)
		}
		if r.DeleteID == 0 && (r.Date == "" || r.Customer.ExternalID == "" && r.Customer.Email == "" && r.Customer.Phone == "" && r.Customer.Token == "") {
			t.Fatalf("accepted an event without its date or customer: %+v", r)
		}
		again, err := p.Parse(fuzzcheck.JSON(t, "normal form", normalForm(r)))
		if err != nil {
			t.Fatalf("the normal form of %s is refused: %v", raw, err)
		}
		r.Ignored = nil // the normal form holds fields only
		if diff := cmp.Diff(r, again, nilIsEmpty); diff != "" {
			t.Fatalf("the normal form of %s parses to another record (-first +again):\n%s", raw, diff)
		}
	})
}

// removable are the customer fields an event removes with "", under the
// same name in the event and the customer.
var removable = []string{"first_name", "last_name", "street_address", "zip_code", "country", "language", "company"}

// normalForm writes a parsed record back as an event record.
func normalForm(r activity.Record) map[string]any {
	if r.DeleteID > 0 {
		return map[string]any{"id": r.DeleteID, "is_deleted": true}
	}
	m := map[string]any{"type": r.Type, "date": r.Date}
	for k, v := range r.Fields {
		m[k] = v
	}
	for k, v := range r.Personal {
		m[k] = v
	}
	for _, f := range r.Customer.Changes.Unset {
		for _, k := range removable {
			if f == k {
				m[k] = ""
			}
		}
	}
	return m
}
