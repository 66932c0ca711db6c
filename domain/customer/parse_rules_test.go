package customer_test

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/clientele/clientele/domain/customer"
)

// TestParsePhoneRegion: a phone number without + is read in the record's
// own country, else in the company's phone_region; without either it is
// refused (its country would be a guess), and so is a number invalid in
// the region read. A number with + is read alone, whatever the region.
func TestParsePhoneRegion(t *testing.T) {
	fi := acme
	fi.PhoneRegion = "FI"
	tests := []struct {
		name   string
		region string // the company's
		record string
		want   string // phone_number in E.164; "" when refused
	}{
		{"the record's country", "", `"phone_number": "040 987 6543", "country": "FI"`, "+358409876543"},
		{"the record's country, any case", "", `"phone_number": "040-987 6543", "country": "fi"`, "+358409876543"},
		{"the company's region", "FI", `"phone_number": "040 987 6543"`, "+358409876543"},
		{"the record's country wins over the company's", "FI", `"phone_number": "070-123 45 67", "country": "SE"`, "+46701234567"},
		{"a removed country leaves the company's", "FI", `"phone_number": "040 987 6543", "country": ""`, "+358409876543"},
		{"an international prefix of the region", "FI", `"phone_number": "00358 40 987 6543"`, "+358409876543"},
		{"international form, another country", "FI", `"phone_number": "+46 70 123 45 67"`, "+46701234567"},
		{"an extension", "FI", `"phone_number": "040 987 6543 ext. 12"`, "+358409876543"},
		{"no region", "", `"phone_number": "040 987 6543"`, ""},
		{"invalid in the region", "FI", `"phone_number": "040 98"`, ""},
		{"letters", "FI", `"phone_number": "040 CALL ME"`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := acme
			c.PhoneRegion = tt.region
			r, err := customer.NewParser(c).Parse([]byte(`{"external_id": "X1", ` + tt.record + `}`))
			if tt.want == "" {
				var pr *customer.Problem
				if !errors.As(err, &pr) || pr.Field != "phone_number" {
					t.Fatalf("Parse = %+v, %v; want a rejection of phone_number", r, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if r.Phone != tt.want || r.Changes.Set["phone_number"] != tt.want {
				t.Errorf("phone %q (Set %v), want %s", r.Phone, r.Changes.Set["phone_number"], tt.want)
			}
		})
	}
	_, err := customer.NewParser(fi).Parse([]byte(`{"external_id": "X1", "phone_number": "040 98"}`))
	if pr := (*customer.Problem)(nil); !errors.As(err, &pr) || pr.Reason == "must be a valid phone number in international form, starting with +" {
		t.Errorf("with a region the reason must say national numbers are read: %v", err)
	}
}

// TestParseGuestByEmail: an external_id that is an email address is no
// external id (WooCommerce's guests): the record is a guest's, found by
// its email, and the address is the email when the record gives none.
// Any other invalid external_id is still refused.
func TestParseGuestByEmail(t *testing.T) {
	p := customer.NewParser(acme)
	tests := []struct {
		name, in string
		want     customer.Record // Changes.Set and identities only
		refused  string          // the field, when refused
	}{
		{name: "the address is the email", in: `{"external_id": "Sanna.Guest@Example.com", "first_name": "Sanna"}`,
			want: customer.Record{Email: "sanna.guest@example.com",
				Changes: customer.Changes{Set: map[string]any{"email": "sanna.guest@example.com", "first_name": "Sanna"}}}},
		{name: "the email given wins", in: `{"external_id": "old@example.com", "email": "New@Example.com"}`,
			want: customer.Record{Email: "new@example.com", Changes: customer.Changes{Set: map[string]any{"email": "new@example.com"}}}},
		{name: "a blank email is none", in: `{"external_id": "guest@example.com", "email": ""}`,
			want: customer.Record{Email: "guest@example.com", Changes: customer.Changes{Set: map[string]any{"email": "guest@example.com"}}}},
		{name: "an ordinary external_id", in: `{"external_id": "A-1", "email": "a@example.com"}`,
			want: customer.Record{ExternalID: "A-1", Email: "a@example.com",
				Changes: customer.Changes{Set: map[string]any{"external_id": "A-1", "email": "a@example.com"}}}},
		{name: "an @ that is no address", in: `{"external_id": "a@b", "email": "a@example.com"}`, refused: "external_id"},
		{name: "an address with a display name", in: `{"external_id": "Ann <a@example.com>"}`, refused: "external_id"},
		{name: "an invalid email beside it", in: `{"external_id": "a@example.com", "email": "not an address"}`, refused: "email"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := p.Parse([]byte(tt.in))
			if tt.refused != "" {
				var pr *customer.Problem
				if !errors.As(err, &pr) || pr.Field != tt.refused {
					t.Fatalf("Parse = %+v, %v; want a rejection of %s", r, err, tt.refused)
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			got := customer.Record{ExternalID: r.ExternalID, Email: r.Email, Phone: r.Phone, Changes: customer.Changes{Set: r.Changes.Set}}
			if diff := cmp.Diff(tt.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestParseEmbedded: in the customer part of an event or a sale a blank
// is not given, so it removes nothing (field, identity, list or
// permission), while the effects of an event's type still apply with the
// record rules ("" removes there).
func TestParseEmbedded(t *testing.T) {
	p := customer.NewParser(acme)
	r, err := p.ParseEmbedded(map[string]any{
		"external_id": "17", "phone_number": "", "email": " ", "first_name": "", "can_email": "", "tags": "", "city": nil,
	}, map[string]any{"mailing_lists": "", "can_sms": false})
	if err != nil {
		t.Fatal(err)
	}
	want := customer.Record{ExternalID: "17", Embedded: true, Changes: customer.Changes{
		Set: map[string]any{"external_id": "17", "can_sms": false}, Unset: []string{"mailing_lists"}}}
	if diff := cmp.Diff(want, r, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if _, err := p.ParseEmbedded(map[string]any{"phone_number": "", "first_name": "Ann"}, nil); err == nil {
		t.Error("a blank identifier is no identifier: want ReasonNoID")
	}
}

// TestDecideEmbeddedBlankKeepsTheIdentity: a customer part that sends the
// customer's phone number as "" leaves the customer holding it, so the
// number still finds them; a customer record's "" frees it.
func TestDecideEmbeddedBlankKeepsTheIdentity(t *testing.T) {
	p := customer.NewParser(acme)
	b := newBook()
	r, _ := p.Parse([]byte(`{"external_id": "17", "phone_number": "+358507654321"}`))
	if got := describe(b.Decide(r)); got != "c1 created" {
		t.Fatalf("create: %s", got)
	}
	part, err := p.ParseEmbedded(map[string]any{"external_id": "17", "phone_number": ""}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := describe(b.Decide(part)); got != "c1 unchanged" {
		t.Errorf("embedded blank phone: %s, want c1 unchanged", got)
	}
	byPhone, _ := p.Parse([]byte(`{"phone_number": "+358 50 765 4321", "first_name": "Elina"}`))
	if got := describe(b.Decide(byPhone)); got != "c1 upserted" {
		t.Errorf("the phone number no longer finds the customer: %s", got)
	}
	record, _ := p.Parse([]byte(`{"external_id": "17", "phone_number": ""}`))
	b.Decide(record)
	again, _ := p.Parse([]byte(`{"phone_number": "+358507654321"}`))
	if got := describe(b.Decide(again)); got != "c2 created" {
		t.Errorf("a customer record's \"\" frees the number: %s, want c2 created", got)
	}
}
