package activity_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/clientele/clientele/domain/activity"
	"github.com/clientele/clientele/domain/company"
	"github.com/clientele/clientele/domain/customer"
	"github.com/clientele/clientele/domain/product"
)

// acme defines QUIZ_DONE; other does not. Europe/Helsinki is UTC+3 in
// summer, so a naive "2024-07-01 12:00:00" is 09:00Z.
var (
	acme  = company.Company{ID: "c1", ShortName: "ACME", Timezone: "Europe/Helsinki", CustomEventTypes: []string{"QUIZ_DONE"}}
	other = company.Company{ID: "c2", ShortName: "OTHER", Timezone: "UTC"}
)

// nilIsEmpty: an absent map or list and an empty one mean the same here.
var nilIsEmpty = cmpopts.EquateEmpty()

func parse(t *testing.T, c company.Company, in string) activity.Record {
	t.Helper()
	r, err := activity.NewParser(c).Parse([]byte(in))
	if err != nil {
		t.Fatalf("rejected: %v", err)
	}
	return r
}

// TestParseRecord checks whole records: the event's fields, the customer
// part with the effects of the type, the product and the personal fields.
func TestParseRecord(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want activity.Record
	}{
		{
			name: "MAIL_SUBSCRIBE creates, grants email and adds the lists",
			in: `{"type": "MAIL_SUBSCRIBE", "date": "2024-07-01 12:00:00", "email": " Ann@Example.COM ",
				"phone_number": "+358 40 1234567", "country": "uk", "language": "en_US", "first_name": "Ann",
				"mailing_lists": ["news", "offers"], "tags": ["b", "a", "b"], "source": "form"}`,
			want: activity.Record{
				Type: "MAIL_SUBSCRIBE", Date: "2024-07-01T09:00:00Z",
				Customer: customer.Record{Email: "ann@example.com", Phone: "+358401234567",
					Changes: customer.Changes{
						Set: map[string]any{"email": "ann@example.com", "phone_number": "+358401234567",
							"country": "GB", "language": "en", "first_name": "Ann", "can_email": true},
						Add: map[string][]string{"mailing_lists": {"news", "offers"}},
					},
					MustExist: false, Embedded: true},
				Fields: map[string]any{"mailing_lists": []string{"news", "offers"}, "tags": []string{"a", "b"}, "source": "form"},
				Personal: map[string]any{"email": "ann@example.com", "phone_number": "+358401234567",
					"country": "GB", "language": "en", "first_name": "Ann"},
			},
		},
		{
			name: "campaign_key trimmed, as campaign keys are",
			in:   `{"type": "MAIL_SENT", "date": "2024-07-01T12:00:00Z", "customer_id": "C-1", "campaign_key": " CA-1\t"}`,
			want: activity.Record{
				Type: "MAIL_SENT", Date: "2024-07-01T12:00:00Z",
				Customer: customer.Record{ExternalID: "C-1",
					Changes:   customer.Changes{Set: map[string]any{"external_id": "C-1"}},
					MustExist: true, Embedded: true},
				Fields:   map[string]any{"campaign_key": "CA-1"},
				Personal: map[string]any{"customer_id": "C-1"},
			},
		},
		{
			name: "MAIL_UNSUBSCRIBE leaves the lists named",
			in:   `{"type": "MAIL_UNSUBSCRIBE", "date": "2024-07-01T12:00:00Z", "customer_id": "C-1", "mailing_lists": "news", "campaign_key": 42}`,
			want: activity.Record{
				Type: "MAIL_UNSUBSCRIBE", Date: "2024-07-01T12:00:00Z",
				Customer: customer.Record{ExternalID: "C-1",
					Changes: customer.Changes{
						Set:    map[string]any{"external_id": "C-1"},
						Remove: map[string][]string{"mailing_lists": {"news"}},
					},
					MustExist: true, Embedded: true},
				Fields:   map[string]any{"mailing_lists": []string{"news"}, "campaign_key": "42"},
				Personal: map[string]any{"customer_id": "C-1"},
			},
		},
		{
			name: "MAIL_UNSUBSCRIBE _ leaves every list and email marketing",
			in:   `{"type": "MAIL_UNSUBSCRIBE", "date": "2024-07-01T12:00:00Z", "customer_id": "C-1", "mailing_lists": ["_"]}`,
			want: activity.Record{
				Type: "MAIL_UNSUBSCRIBE", Date: "2024-07-01T12:00:00Z",
				Customer: customer.Record{ExternalID: "C-1",
					Changes: customer.Changes{
						Set:   map[string]any{"external_id": "C-1", "can_email": false},
						Unset: []string{"mailing_lists"},
					},
					MustExist: true, Embedded: true},
				Fields:   map[string]any{"mailing_lists": []string{"_"}},
				Personal: map[string]any{"customer_id": "C-1"},
			},
		},
		{
			name: "SMS_SUBSCRIBE creates and grants SMS",
			in:   `{"type": "SMS_SUBSCRIBE", "date": "2024-07-01T12:00:00Z", "phone_number": "+358401234567"}`,
			want: activity.Record{
				Type: "SMS_SUBSCRIBE", Date: "2024-07-01T12:00:00Z",
				Customer: customer.Record{Phone: "+358401234567",
					Changes:   customer.Changes{Set: map[string]any{"phone_number": "+358401234567", "can_sms": true}},
					MustExist: false, Embedded: true},
				Personal: map[string]any{"phone_number": "+358401234567"},
			},
		},
		{
			name: "SMS_UNSUBSCRIBE revokes SMS",
			in:   `{"type": "SMS_UNSUBSCRIBE", "date": "2024-07-01T12:00:00Z", "phone_number": "+358401234567", "reason": "too many"}`,
			want: activity.Record{
				Type: "SMS_UNSUBSCRIBE", Date: "2024-07-01T12:00:00Z",
				Customer: customer.Record{Phone: "+358401234567",
					Changes:   customer.Changes{Set: map[string]any{"phone_number": "+358401234567", "can_sms": false}},
					MustExist: true, Embedded: true},
				Fields:   map[string]any{"reason": "too many"},
				Personal: map[string]any{"phone_number": "+358401234567"},
			},
		},
		{
			name: "BASKET_ADD names its product, with details to create it",
			in: `{"type": "BASKET_ADD", "date": "2024-07-01T12:00:00Z", "customer_id": 55,
				"product_id": 9, "sku": "S-9", "product_ean": 6410405082657,
				"product_title": "Mug", "product_price": "1050.00", "product_currency": "eur",
				"product_brand": "B", "product_category": ["Home", "Kitchen"], "product_type": "mug",
				"product_vendor": "V", "product_url": "https://shop.test/mug", "product_image": "/mug.jpg"}`,
			want: activity.Record{
				Type: "BASKET_ADD", Date: "2024-07-01T12:00:00Z",
				Customer: customer.Record{ExternalID: "55",
					Changes: customer.Changes{Set: map[string]any{"external_id": "55"}}, MustExist: true, Embedded: true},
				Product: product.Ref{ExternalID: "9", SKU: "S-9", EAN: "6410405082657", Details: map[string]any{
					"title": "Mug", "price": int64(1050), "currency": "EUR", "brand": "B",
					"category": []string{"Home", "Kitchen"}, "type": "mug", "vendor": "V",
					"url": "https://shop.test/mug", "image": "/mug.jpg"}},
				Fields: map[string]any{"product_id": "9", "sku": "S-9", "product_ean": "6410405082657",
					"product_title": "Mug", "product_price": int64(1050), "product_currency": "EUR",
					"product_brand": "B", "product_category": []string{"Home", "Kitchen"}, "product_type": "mug",
					"product_vendor": "V", "product_url": "https://shop.test/mug", "product_image": "/mug.jpg"},
				Personal: map[string]any{"customer_id": "55"},
			},
		},
		{
			name: "company type with company fields, any prefix case",
			in: `{"type": "QUIZ_DONE", "date": "2024-07-01T12:00:00Z", "email": "ann@example.com",
				"acme__score": 7, "Acme__answers": {"q1": "a"}, "ACME__empty": ""}`,
			want: activity.Record{
				Type: "QUIZ_DONE", Date: "2024-07-01T12:00:00Z",
				Customer: customer.Record{Email: "ann@example.com",
					Changes: customer.Changes{Set: map[string]any{"email": "ann@example.com"}}, MustExist: true, Embedded: true},
				Fields:   map[string]any{"ACME__score": json.Number("7"), "ACME__answers": map[string]any{"q1": "a"}},
				Personal: map[string]any{"email": "ann@example.com"},
			},
		},
		{
			name: "CSV: every value a string",
			in: `{"type": "SENTIMENT", "date": "2024-01-15", "customer_id": " 55 ", "sentiment_value": "-3",
				"is_deleted": "false", "tags": "vip", "sale_id": "S1", "price": "990", "ean": "123"}`,
			want: activity.Record{
				Type: "SENTIMENT", Date: "2024-01-14T22:00:00Z",
				Customer: customer.Record{ExternalID: "55",
					Changes: customer.Changes{Set: map[string]any{"external_id": "55"}}, MustExist: true, Embedded: true},
				Product:  product.Ref{EAN: "123", Details: map[string]any{"price": int64(990)}},
				Fields:   map[string]any{"sentiment_value": int64(-3), "tags": []string{"vip"}, "sale_id": "S1", "price": int64(990), "ean": "123"},
				Personal: map[string]any{"customer_id": "55"},
			},
		},
		{
			name: "blanks are absent: a customer field, an identifier or an event field is not given, and nothing is removed",
			in: `{"type": "ORDER_SHIPPED", "date": "2024-07-01T12:00:00Z", "customer_id": "C-1", "email": " ", "phone_number": "",
				"last_name": "", "zip_code": "", "reason": "", "tracking_number": 123456, "sale_id": null}`,
			want: activity.Record{
				Type: "ORDER_SHIPPED", Date: "2024-07-01T12:00:00Z",
				Customer: customer.Record{ExternalID: "C-1",
					Changes:   customer.Changes{Set: map[string]any{"external_id": "C-1"}},
					MustExist: true, Embedded: true},
				Fields:   map[string]any{"tracking_number": "123456"},
				Personal: map[string]any{"customer_id": "C-1"},
			},
		},
		{
			name: "MAIL_SUBSCRIBE without mailing_lists (Magento's newsletter) grants email and leaves the lists",
			in:   `{"type": "MAIL_SUBSCRIBE", "date": "2026-01-07 10:00:00", "email": "aino@example.com", "customer_id": "42", "store_id": "1"}`,
			want: activity.Record{
				Type: "MAIL_SUBSCRIBE", Date: "2026-01-07T08:00:00Z",
				Customer: customer.Record{ExternalID: "42", Email: "aino@example.com",
					Changes:  customer.Changes{Set: map[string]any{"external_id": "42", "email": "aino@example.com", "can_email": true}},
					Embedded: true},
				Personal: map[string]any{"customer_id": "42", "email": "aino@example.com"},
				Ignored:  []string{"store_id"},
			},
		},
		{
			name: "MAIL_UNSUBSCRIBE without mailing_lists leaves every list and email marketing, as _",
			in:   `{"type": "MAIL_UNSUBSCRIBE", "date": "2024-07-01T12:00:00Z", "customer_id": "C-1"}`,
			want: activity.Record{
				Type: "MAIL_UNSUBSCRIBE", Date: "2024-07-01T12:00:00Z",
				Customer: customer.Record{ExternalID: "C-1",
					Changes: customer.Changes{
						Set:   map[string]any{"external_id": "C-1", "can_email": false},
						Unset: []string{"mailing_lists"},
					},
					MustExist: true, Embedded: true},
				Personal: map[string]any{"customer_id": "C-1"},
			},
		},
		{
			name: "an email address as customer_id is a guest's: no customer id, the address is the email",
			in:   `{"type": "MAIL_SUBSCRIBE", "date": "2024-07-01T12:00:00Z", "customer_id": "Sanna.Guest@Example.com"}`,
			want: activity.Record{
				Type: "MAIL_SUBSCRIBE", Date: "2024-07-01T12:00:00Z",
				Customer: customer.Record{Email: "sanna.guest@example.com",
					Changes:  customer.Changes{Set: map[string]any{"email": "sanna.guest@example.com", "can_email": true}},
					Embedded: true},
				Personal: map[string]any{"email": "sanna.guest@example.com"},
			},
		},
		{
			name: "an email address as customer_id beside an email: the email wins",
			in:   `{"type": "BROWSE", "date": "2024-07-01T12:00:00Z", "customer_id": "old@example.com", "email": "new@example.com", "label": "x"}`,
			want: activity.Record{
				Type: "BROWSE", Date: "2024-07-01T12:00:00Z",
				Customer: customer.Record{Email: "new@example.com",
					Changes:   customer.Changes{Set: map[string]any{"email": "new@example.com"}},
					MustExist: true, Embedded: true},
				Fields:   map[string]any{"label": "x"},
				Personal: map[string]any{"email": "new@example.com"},
			},
		},
		{
			name: "a national phone number is read in the event's country",
			in:   `{"type": "SMS_SUBSCRIBE", "date": "2024-07-01T12:00:00Z", "phone_number": "040 987 6543", "country": "fi"}`,
			want: activity.Record{
				Type: "SMS_SUBSCRIBE", Date: "2024-07-01T12:00:00Z",
				Customer: customer.Record{Phone: "+358409876543",
					Changes:  customer.Changes{Set: map[string]any{"phone_number": "+358409876543", "country": "FI", "can_sms": true}},
					Embedded: true},
				Personal: map[string]any{"phone_number": "+358409876543", "country": "FI"},
			},
		},
		{
			name: "a token beside an identifier is kept, in Personal, and does not find the customer",
			in: `{"type": "BROWSE", "date": "2024-07-01T12:00:00Z", "customer_id": "C-1", "customer_token": " tok ",
				"path": "/a", "street_address": "Main St 1", "company": "Acme Oy"}`,
			want: activity.Record{
				Type: "BROWSE", Date: "2024-07-01T12:00:00Z",
				Customer: customer.Record{ExternalID: "C-1", Token: "tok",
					Changes:   customer.Changes{Set: map[string]any{"external_id": "C-1", "street_address": "Main St 1", "company": "Acme Oy"}},
					MustExist: true, Embedded: true},
				Fields:   map[string]any{"path": "/a"},
				Personal: map[string]any{"customer_id": "C-1", "customer_token": "tok", "street_address": "Main St 1", "company": "Acme Oy"},
			},
		},
		{
			name: "a token alone names the customer; a subscription by token creates nobody (customer.Book.Decide)",
			in:   `{"type": "SMS_SUBSCRIBE", "date": "2024-07-01T12:00:00Z", "customer_token": 12345, "first_name": "Ann"}`,
			want: activity.Record{
				Type: "SMS_SUBSCRIBE", Date: "2024-07-01T12:00:00Z",
				Customer: customer.Record{Token: "12345",
					Changes:  customer.Changes{Set: map[string]any{"can_sms": true, "first_name": "Ann"}},
					Embedded: true},
				Personal: map[string]any{"customer_token": "12345", "first_name": "Ann"},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := parse(t, acme, tt.in)
			if diff := cmp.Diff(tt.want, got, nilIsEmpty); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestParseRejects checks that each rule rejects the record, naming the
// field of the event at fault. Invalid values hold "secret": a reason
// never quotes a value.
func TestParseRejects(t *testing.T) {
	const base = `"date": "2024-07-01T12:00:00Z", "customer_id": "C-1"`
	tests := []struct {
		name   string
		c      company.Company
		in     string
		field  string
		reason string // the exact reason, when it matters
	}{
		{"not an object", acme, `["secret"]`, "", ""},
		{"NUL", acme, `{"type": "BROWSE", ` + base + `, "label": "secret\u0000"}`, "label", ""},

		{"type missing", acme, `{` + base + `, "label": "x"}`, "type", "is required"},
		{"type blank", acme, `{"type": " ", ` + base + `, "label": "x"}`, "type", "is required"},
		{"type not a string", acme, `{"type": 1, ` + base + `, "label": "x"}`, "type", ""},
		{"type lower case", acme, `{"type": "browse", ` + base + `, "label": "x"}`, "type", "must be upper case, such as BROWSE"},
		{"type mixed case", acme, `{"type": "Quiz_Done", ` + base + `}`, "type", "must be upper case, such as BROWSE"},
		{"type unknown", acme, `{"type": "SECRET", ` + base + `}`, "type",
			"unknown event type; company types are defined with `clientele company update --event-type`"},
		{"type of another company", other, `{"type": "QUIZ_DONE", ` + base + `}`, "type",
			"unknown event type; company types are defined with `clientele company update --event-type`"},

		{"date missing", acme, `{"type": "BASKET_ADD", "customer_id": "C-1"}`, "date", "is required"},
		{"date invalid", acme, `{"type": "BASKET_ADD", "date": "secret", "customer_id": "C-1"}`, "date", ""},
		{"date without seconds", acme, `{"type": "BASKET_ADD", "date": "2024-07-01T12:00", "customer_id": "C-1"}`, "date", ""},

		{"no identifier", acme, `{"type": "BASKET_ADD", "date": "2024-07-01", "first_name": "secret"}`, "", ""},
		{"blank identifiers", acme, `{"type": "BASKET_ADD", "date": "2024-07-01", "customer_id": "", "email": " "}`, "", ""},

		{"BROWSE without what", acme, `{"type": "BROWSE", ` + base + `, "reason": "x"}`, "", ""},
		{"MAIL_SUBSCRIBE empty list", acme, `{"type": "MAIL_SUBSCRIBE", ` + base + `, "mailing_lists": ["", null]}`, "mailing_lists",
			"must name at least one list, or be left out for email marketing as a whole"},
		{"MAIL_SUBSCRIBE blank lists", acme, `{"type": "MAIL_SUBSCRIBE", ` + base + `, "mailing_lists": ""}`, "mailing_lists", ""},
		{"MAIL_UNSUBSCRIBE no list", acme, `{"type": "MAIL_UNSUBSCRIBE", ` + base + `, "mailing_lists": []}`, "mailing_lists", ""},
		{"MAIL_UNSUBSCRIBE _ with names", acme, `{"type": "MAIL_UNSUBSCRIBE", ` + base + `, "mailing_lists": ["_", "news"]}`, "mailing_lists", ""},
		{"ORDER_SHIPPED without tracking number", acme, `{"type": "ORDER_SHIPPED", ` + base + `, "sale_id": "S1"}`, "tracking_number", ""},
		{"SENTIMENT without value", acme, `{"type": "SENTIMENT", ` + base + `}`, "sentiment_value", ""},
		{"SENTIMENT fraction", acme, `{"type": "SENTIMENT", ` + base + `, "sentiment_value": 7.5}`, "sentiment_value", ""},
		{"SENTIMENT not a number", acme, `{"type": "SENTIMENT", ` + base + `, "sentiment_value": "secret"}`, "sentiment_value", ""},

		{"id without is_deleted", acme, `{"id": 12, "type": "BROWSE", ` + base + `, "label": "x"}`, "id",
			"ids are given by the service; send {id, is_deleted: true} to delete an event"},
		{"id with is_deleted false", acme, `{"id": 12, "is_deleted": false}`, "id",
			"ids are given by the service; send {id, is_deleted: true} to delete an event"},
		{"is_deleted without id", acme, `{"is_deleted": true, "type": "BROWSE", ` + base + `, "label": "x"}`, "id", ""},
		{"is_deleted with id zero", acme, `{"is_deleted": true, "id": 0}`, "id", ""},
		{"is_deleted with negative id", acme, `{"is_deleted": true, "id": "-3"}`, "id", ""},
		{"is_deleted with a fractional id", acme, `{"is_deleted": true, "id": 1.5}`, "id", ""},
		{"is_deleted with a text id", acme, `{"is_deleted": true, "id": "secret"}`, "id", ""},
		{"is_deleted not a boolean", acme, `{"is_deleted": "secret", "id": 1}`, "is_deleted", ""},

		// The customer's rules, under the event's names.
		{"customer_id invalid", acme, `{"type": "BASKET_ADD", "date": "2024-07-01", "customer_id": "secret_1"}`, "customer_id", ""},
		{"email invalid", acme, `{"type": "BASKET_ADD", "date": "2024-07-01", "email": "secret"}`, "email", ""},
		{"phone invalid", acme, `{"type": "BASKET_ADD", "date": "2024-07-01", "phone_number": "+358 secret"}`, "phone_number", ""},
		{"phone national without a country", acme, `{"type": "BASKET_ADD", "date": "2024-07-01", "phone_number": "040 987 6543"}`, "phone_number",
			"must be a valid phone number in international form, starting with +"},
		{"customer_id neither an id nor an address", acme, `{"type": "BASKET_ADD", "date": "2024-07-01", "customer_id": "secret@example"}`, "customer_id", ""},
		{"country invalid", acme, `{"type": "BASKET_ADD", ` + base + `, "country": "SECRET"}`, "country", ""},
		{"language invalid", acme, `{"type": "BASKET_ADD", ` + base + `, "language": "secret"}`, "language", ""},
		{"first_name not text", acme, `{"type": "BASKET_ADD", ` + base + `, "first_name": ["secret"]}`, "first_name", ""},
		{"mailing_lists not strings", acme, `{"type": "MAIL_SUBSCRIBE", ` + base + `, "mailing_lists": [true]}`, "mailing_lists", ""},
		{"mailing_lists an object", acme, `{"type": "MAIL_SUBSCRIBE", ` + base + `, "mailing_lists": {"add": ["secret"]}}`, "mailing_lists", ""},

		// The product's rules, under the event's names.
		{"price with a fraction of a cent", acme, `{"type": "BASKET_ADD", ` + base + `, "product_id": "P", "price": "10.50"}`, "price",
			"must be a whole number of minor units (cents): a fraction of a minor unit is not accepted"},
		{"product_price with a fraction of a cent", acme, `{"type": "BASKET_ADD", ` + base + `, "product_id": "P", "product_price": 1050.5}`, "product_price", ""},
		{"product_url not a URL", acme, `{"type": "BASKET_ADD", ` + base + `, "product_id": "P", "product_url": "secret"}`, "product_url", ""},
		{"product_currency invalid", acme, `{"type": "BASKET_ADD", ` + base + `, "product_id": "P", "product_currency": "E1"}`, "product_currency", ""},
		{"product_id a list", acme, `{"type": "BASKET_ADD", ` + base + `, "product_id": ["secret"]}`, "product_id", ""},
		{"ean too long", acme, `{"type": "BASKET_ADD", ` + base + `, "ean": "` + strings.Repeat("9", 201) + `"}`, "ean", ""},
		{"sku and product_sku differ", acme, `{"type": "BASKET_ADD", ` + base + `, "sku": "secret", "product_sku": "A"}`, "sku", ""},
		{"title and product_title differ", acme, `{"type": "BASKET_ADD", ` + base + `, "sku": "A", "product_title": "secret", "title": "T"}`, "title", ""},

		// Other values and keys.
		{"label not text", acme, `{"type": "BROWSE", ` + base + `, "label": true}`, "label", ""},
		{"tags an object", acme, `{"type": "BROWSE", ` + base + `, "label": "x", "tags": {"a": "secret"}}`, "tags", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := activity.NewParser(tt.c).Parse([]byte(tt.in))
			var prob *activity.Problem
			if !errors.As(err, &prob) {
				t.Fatalf("got %+v, %v; want a *Problem", r, err)
			}
			if prob.Field != tt.field || (tt.reason != "" && prob.Reason != tt.reason) {
				t.Errorf("got field %q reason %q; want field %q reason %q", prob.Field, prob.Reason, tt.field, tt.reason)
			}
			if prob.Reason == "" || strings.Contains(strings.ToLower(err.Error()), "secret") {
				t.Errorf("reason %q is empty or quotes the value", err.Error())
			}
		})
	}
}

// TestParseDeletion: {id, is_deleted: true} deletes, whatever else the
// record holds, with the loose types of real clients.
func TestParseDeletion(t *testing.T) {
	for name, in := range map[string]string{
		"number":                     `{"id": 12, "is_deleted": true}`,
		"strings from CSV":           `{"id": " 12 ", "is_deleted": "TRUE"}`,
		"1 for true":                 `{"id": "12", "is_deleted": 1}`,
		"other keys ignored":         `{"id": 12, "is_deleted": true, "type": "nonsense", "colour": "x", "date": "x"}`,
		"whole number with fraction": `{"id": 12.0, "is_deleted": true}`,
	} {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(activity.Record{DeleteID: 12}, parse(t, acme, in), nilIsEmpty); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
	// is_deleted false is ignored: the record is an event.
	r := parse(t, acme, `{"is_deleted": false, "type": "BROWSE", "date": "2024-07-01", "customer_id": "C-1", "label": "x"}`)
	if r.DeleteID != 0 || r.Type != "BROWSE" {
		t.Errorf("got %+v, want a BROWSE event", r)
	}
}

// TestParseTypes: every built-in, campaign and company type is accepted
// with its required fields, and only the two subscriptions may create
// their customer.
func TestParseTypes(t *testing.T) {
	tests := []struct {
		typ, extra string
		creates    bool
	}{
		{"BROWSE", `"utm_campaign": "x"`, false},
		{"MAIL_SUBSCRIBE", `"mailing_lists": "news"`, true},
		{"MAIL_UNSUBSCRIBE", `"mailing_lists": "news"`, false},
		{"ORDER_SHIPPED", `"tracking_number": "T"`, false},
		{"BASKET_ADD", `"product_id": "P"`, false},
		{"SENTIMENT", `"sentiment_value": 10`, false},
		{"SMS_SUBSCRIBE", `"reason": "x"`, true},
		{"SMS_UNSUBSCRIBE", `"reason": "x"`, false},
		{"MAIL_SENT", `"campaign_key": "K"`, false},
		{"MAIL_DELIVERED", `"campaign_key": "K"`, false},
		{"MAIL_OPEN", `"campaign_key": "K"`, false},
		{"MAIL_CLICK", `"campaign_key": "K"`, false},
		{"MAIL_BOUNCE", `"campaign_key": "K"`, false},
		{"MAIL_SPAM_REPORT", `"campaign_key": "K"`, false},
		{"SMS_SENT", `"campaign_key": "K"`, false},
		{"SMS_DELIVERED", `"campaign_key": "K"`, false},
		{"SMS_CLICK", `"campaign_key": "K"`, false},
		{"SMS_BOUNCE", `"campaign_key": "K"`, false},
		{"QUIZ_DONE", `"reason": "x"`, false},
	}
	for _, tt := range tests {
		t.Run(tt.typ, func(t *testing.T) {
			r := parse(t, acme, `{"type": " `+tt.typ+` ", "date": "2024-07-01", "customer_id": "C-1", `+tt.extra+`}`)
			if r.Type != tt.typ || r.Customer.MustExist == tt.creates || !r.Customer.Embedded {
				t.Errorf("got type %q MustExist %v Embedded %v; want %q, MustExist %v, Embedded",
					r.Type, r.Customer.MustExist, r.Customer.Embedded, tt.typ, !tt.creates)
			}
		})
	}
}

// TestParseBrowse: each of the fields that say what was browsed is
// enough on its own.
func TestParseBrowse(t *testing.T) {
	for _, f := range []string{"label", "product_ean", "product_id", "path", "utm_campaign", "ean", "sku", "product_sku"} {
		t.Run(f, func(t *testing.T) {
			parse(t, acme, `{"type": "BROWSE", "date": "2024-07-01", "customer_id": "C-1", "`+f+`": "x"}`)
		})
	}
}

// TestParseProduct: which fields make the reference, in which spelling,
// and that details go to the product only when the event names one.
func TestParseProduct(t *testing.T) {
	tests := []struct {
		name, fields string
		want         product.Ref
		key          string
	}{
		{"all three: product_id first", `"product_id": " P1 ", "sku": "S1", "ean": "E1"`,
			product.Ref{ExternalID: "P1", SKU: "S1", EAN: "E1"}, "id:P1"},
		{"sku before ean", `"product_sku": "S1", "product_ean": "E1"`,
			product.Ref{SKU: "S1", EAN: "E1"}, "sku:S1"},
		{"ean as a number", `"ean": 6410405082657`,
			product.Ref{EAN: "6410405082657"}, "ean:6410405082657"},
		{"both spellings with one value", `"sku": "S1", "product_sku": " S1", "title": 5, "product_title": "5"`,
			product.Ref{SKU: "S1", Details: map[string]any{"title": "5"}}, "sku:S1"},
		{"details without a product stay on the event only", `"product_title": "Mug", "price": 100`,
			product.Ref{}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := parse(t, acme, `{"type": "BASKET_ADD", "date": "2024-07-01", "customer_id": "C-1", `+tt.fields+`}`)
			if diff := cmp.Diff(tt.want, r.Product, nilIsEmpty); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if got := r.Product.Key(); got != tt.key {
				t.Errorf("Key() = %q, want %q", got, tt.key)
			}
		})
	}
	r := parse(t, acme, `{"type": "BASKET_ADD", "date": "2024-07-01", "customer_id": "C-1", "product_title": "Mug", "price": 100}`)
	if diff := cmp.Diff(map[string]any{"product_title": "Mug", "price": int64(100)}, r.Fields); diff != "" {
		t.Errorf("details without a product, Fields (-want +got):\n%s", diff)
	}
}

// TestParseDates: datetimes follow the decisions; naive ones are in the
// company's timezone.
func TestParseDates(t *testing.T) {
	for in, want := range map[string]string{
		"2024-07-01 12:00:00":       "2024-07-01T09:00:00Z",
		"2024-07-01T12:00:00.5":     "2024-07-01T09:00:00.5Z",
		"2024-01-15":                "2024-01-14T22:00:00Z",
		"2024-07-01T12:00:00Z":      "2024-07-01T12:00:00Z",
		"2024-07-01T12:00:00+05:30": "2024-07-01T06:30:00Z",
	} {
		t.Run(in, func(t *testing.T) {
			r := parse(t, acme, `{"type": "BASKET_ADD", "date": "`+in+`", "customer_id": "C-1"}`)
			if r.Date != want {
				t.Errorf("Date = %q, want %q", r.Date, want)
			}
		})
	}
	r := parse(t, other, `{"type": "BASKET_ADD", "date": "2024-07-01 12:00:00", "customer_id": "C-1"}`)
	if r.Date != "2024-07-01T12:00:00Z" {
		t.Errorf("UTC company: Date = %q", r.Date)
	}
}

func TestProblemError(t *testing.T) {
	if got := (&activity.Problem{Field: "type", Reason: "is required"}).Error(); got != "type: is required" {
		t.Errorf("Error() = %q", got)
	}
	if got := (&activity.Problem{Reason: "r"}).Error(); got != "r" {
		t.Errorf("Error() without field = %q", got)
	}
}
