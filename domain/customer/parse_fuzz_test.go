package customer_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/clientele/clientele/domain/customer"
	"github.com/clientele/clientele/domain/fuzzcheck"
	"github.com/clientele/clientele/domain/values"
)

// FuzzParse checks the record parser on any bytes: a refusal is a
// *Problem, and an accepted record has an identity, encodes to valid JSON
// without U+0000, and is its own normal form: written back as an import
// record, it parses to the same record (idempotence).
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		`{"external_id": "A-1", "email": "Ann@Example.COM", "phone_number": "+358 40 1234567", "first_name": " Ann ",
			"can_email": "TRUE", "can_sms": "", "date_joined": "2024-07-01 12:00:00", "birth_date": "1984-02-29",
			"country": "uk", "language": "en_US", "tags": ["b", "a", "b"], "mailing_lists": "news", "zip_code": 12345}`,
		`{"email": "a@example.com", "tags.add": "x", "tags.remove": ["z", "y"], "mailing_lists": {"add": ["n2"], "remove": "old"}}`,
		`{"external_id": "A", "first_name": "", "tags": "", "ACME__x": "", "acme__prefs": {"n": [1, 2.50]}, "is_deleted": "1"}`,
		`{"email": "a@example.com", "is_forgotten": true, "last_login": "2025-03-01T08:30:00.1234567+05:45"}`,
		`{"external_id": "12", "can_email": "true", "tags": "vip", "date_joined": "2024-01-01 10:00:00", "is_deleted": "false"}`,
		`{"customer_token": " t ", "first_name": "Ann"}`, `{"customer_token": "t", "email": ""}`,
		`{"first_name": "Ann"}`, `[{"email": "a@example.com"}]`, `{"email": "a@example.com", "colour": "red", "OTHER__x": 1, "Ann Smith": 2}`,
	} {
		f.Add([]byte(s))
	}
	p := customer.NewParser(acme)
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
		if r.ExternalID == "" && r.Email == "" && r.Phone == "" && r.Token == "" {
			t.Fatalf("accepted without an identity: %+v", r)
		}
		if _, ok := r.Changes.Set[customer.FieldToken]; ok {
			t.Fatalf("a record sets the token: %+v", r)
		}
		for k, id := range map[string]string{customer.FieldExternalID: r.ExternalID, customer.FieldEmail: r.Email, customer.FieldPhoneNumber: r.Phone} {
			if set, _ := r.Changes.Set[k].(string); set != id {
				t.Fatalf("identity %s is %q, but the record sets %q", k, id, set)
			}
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
func normalForm(r customer.Record) map[string]any {
	m := map[string]any{}
	for k, v := range r.Changes.Set {
		m[k] = v
	}
	for _, k := range r.Changes.Unset {
		m[k] = ""
	}
	for list, l := range r.Changes.Add {
		m[list+".add"] = l
	}
	for list, l := range r.Changes.Remove {
		m[list+".remove"] = l
	}
	if r.Delete {
		m[customer.FieldIsDeleted] = true
	}
	if r.Forget {
		m[customer.FieldIsForgotten] = true
	}
	if r.Token != "" {
		m[customer.FieldToken] = r.Token
	}
	return m
}

// FuzzPhone checks phone numbers: an accepted number is E.164 (a plus and
// at most 15 digits) and is accepted again unchanged.
func FuzzPhone(f *testing.F) {
	for _, s := range []string{
		"+358 40 1234567", "+1 (650) 253-0000", "+358 40 123 4567 ext. 12", "+358401234567 x12", "+358 call me",
		"+1 800 FLOWERS", "0401234567", "+3584012", "+44 20 7946 0958", "+٣٥٨٤٠١٢٣٤٥٦٧", "++358401234567", "+358401234567;ext=1",
	} {
		f.Add(s)
	}
	p := customer.NewParser(acme)
	f.Fuzz(func(t *testing.T, s string) {
		raw, _ := json.Marshal(map[string]string{customer.FieldPhoneNumber: s})
		r, err := p.Parse(raw)
		if err != nil {
			fuzzcheck.Rejection(t, err)
			return
		}
		if len(r.Phone) < 2 || len(r.Phone) > 16 || r.Phone[0] != '+' || strings.Trim(r.Phone[1:], "0123456789") != "" {
			t.Fatalf("phone %q is %q, not E.164", s, r.Phone)
		}
		raw, _ = json.Marshal(map[string]string{customer.FieldPhoneNumber: r.Phone})
		if again, err := p.Parse(raw); err != nil || again.Phone != r.Phone {
			t.Fatalf("phone %q is %q, which re-parses as %q %v", s, r.Phone, again.Phone, err)
		}
	})
}
