package customer_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/clientele/clientele/domain/company"
	"github.com/clientele/clientele/domain/customer"
)

var acme = company.Company{ID: "c1", ShortName: "ACME", Timezone: "Europe/Helsinki"}

// TestParseValues checks each field type with accepted and rejected
// values, JSON-typed and CSV-style (strings). Each value is sent in a
// record that has an external_id, so only the field under test matters.
func TestParseValues(t *testing.T) {
	tests := []struct {
		field string
		value string // JSON
		want  string // JSON of the Set value; "" when rejected
	}{
		{"external_id", `"AB-12"`, `"AB-12"`},
		{"external_id", `" AB-12 "`, `"AB-12"`},
		{"external_id", `12345`, `"12345"`},
		{"external_id", `"ab_12"`, ""},
		{"external_id", `"ab 12"`, ""},
		{"external_id", `"äb"`, ""},
		{"external_id", `1.5`, ""},
		{"external_id", `true`, ""},
		{"external_id", `"` + strings.Repeat("a", 201) + `"`, ""},
		{"phone_number", `"+358 40 1234567"`, `"+358401234567"`},
		{"phone_number", `"+1 (650) 253-0000"`, `"+16502530000"`},
		{"phone_number", `"+358 40 123 4567 ext. 12"`, `"+358401234567"`},
		{"phone_number", `"+358401234567 x12"`, `"+358401234567"`},
		{"phone_number", `"+358 call me"`, ""},            // letters are no digits
		{"phone_number", `"+1 800 FLOWERS"`, ""},          // nor vanity numbers
		{"phone_number", `"+358 40 123 4567 abc"`, ""},    // nor junk after it
		{"phone_number", `"+358 40 ABC 4567 ext. 1"`, ""}, // even with an extension
		{"phone_number", `"0401234567"`, ""},
		{"phone_number", `"+3584012"`, ""},
		{"phone_number", `"+999123456"`, ""},
		{"phone_number", `358401234567`, ""},
		{"email", `"Joe.Doe@Example.COM"`, `"joe.doe@example.com"`},
		{"email", `" ann@example.fi "`, `"ann@example.fi"`},
		{"email", `"ann@example"`, ""},
		{"email", `"Ann <ann@example.fi>"`, ""},
		{"email", `"no address"`, ""},
		{"email", `"ann@[10.0.0.1]"`, ""},
		{"email", `42`, ""},
		{"country", `"fi"`, `"FI"`},
		{"country", `"UK"`, `"GB"`},
		{"country", `"FIN"`, ""},
		{"country", `"EU"`, ""},
		{"country", `"ZZ"`, ""},
		{"country", `246`, ""},
		{"language", `"FI"`, `"fi"`},
		{"language", `"en_US"`, `"en"`},
		{"language", `"eng"`, `"en"`},
		{"language", `"english"`, ""},
		{"language", `"und"`, ""},
		{"language", `"zz"`, ""},
		{"birth_date", `"1984-02-29"`, `"1984-02-29"`},
		{"birth_date", `"1983-02-29"`, ""},
		{"birth_date", `"1980-13-01"`, ""},
		{"birth_date", `"1980-01-01T00:00:00"`, ""},
		{"birth_date", `"01.02.1980"`, ""},
		// Europe/Helsinki is UTC+2 in winter and UTC+3 in summer.
		{"date_joined", `"2024-01-15"`, `"2024-01-14T22:00:00Z"`},
		{"date_joined", `"2024-07-01T12:00:00"`, `"2024-07-01T09:00:00Z"`},
		{"date_joined", `"2024-07-01 12:00:00"`, `"2024-07-01T09:00:00Z"`},
		{"date_joined", `"2024-07-01T12:00:00Z"`, `"2024-07-01T12:00:00Z"`},
		{"date_joined", `"2024-07-01 12:00:00Z"`, `"2024-07-01T12:00:00Z"`},
		{"date_joined", `"2024-07-01T12:00:00+05:30"`, `"2024-07-01T06:30:00Z"`},
		{"date_joined", `"2024-07-01T12:00:00.123456Z"`, `"2024-07-01T12:00:00.123456Z"`},
		{"date_joined", `"2024-07-01T12:00:00.1234567-01:00"`, `"2024-07-01T13:00:00.123456Z"`},
		{"date_joined", `"2024-07-01 12:00:00.5"`, `"2024-07-01T09:00:00.5Z"`},
		{"date_joined", `"2024-07-01T12:00"`, ""},
		{"date_joined", `"2024-07-01T25:00:00"`, ""},
		{"date_joined", `"2024-07-01T12:00:00+0530"`, ""},
		{"date_joined", `"2024/07/01"`, ""},
		{"date_joined", `1719830400`, ""},
		{"last_login", `"2025-03-01 08:30:00"`, `"2025-03-01T06:30:00Z"`},
		{"last_login", `"yesterday"`, ""},
		{"can_email", `true`, `true`},
		{"can_email", `"true"`, `true`},
		{"can_post", `"FALSE"`, `false`},
		{"can_sms", `"1"`, `true`},
		{"can_push", `0`, `false`},
		{"can_profile", `""`, `false`},
		{"can_email", `"yes"`, ""},
		{"can_email", `2`, ""},
		{"mailing_lists", `"news"`, `["news"]`},
		{"mailing_lists", `["b", "a", "b", "", null]`, `["a","b"]`},
		{"mailing_lists", `[]`, `[]`},
		{"tags", `[1, "x"]`, `["1","x"]`},
		{"tags", `[{"a": 1}]`, ""},
		{"tags", `true`, ""},
		{"first_name", `"Ann"`, `"Ann"`},
		{"first_name", `" Ann "`, `" Ann "`},
		{"zip_code", `12345`, `"12345"`},
		{"gender", `"non-binary"`, `"non-binary"`},
		{"last_name", `true`, ""},
		{"city", `["Espoo"]`, ""},
		{"street_address", `{"a": "b"}`, ""},
		{"ACME__size", `"L"`, `"L"`},
		{"ACME__points", `12345678901234567890`, `12345678901234567890`},
		{"ACME__vip", `true`, `true`},
		{"ACME__prefs", `{"colour": "red", "n": [1, 2]}`, `{"colour":"red","n":[1,2]}`},
		{"is_deleted", `"maybe"`, ""},
		{"tags.add", `{"x": 1}`, ""},
	}
	p := customer.NewParser(acme)
	for _, tt := range tests {
		t.Run(tt.field+"="+tt.value, func(t *testing.T) {
			raw := `{"external_id": "X1", "` + tt.field + `": ` + tt.value + `}`
			if tt.field == "external_id" {
				raw = `{"email": "x@example.com", "external_id": ` + tt.value + `}`
			}
			r, err := p.Parse([]byte(raw))
			if tt.want == "" {
				var pr *customer.Problem
				if !errors.As(err, &pr) {
					t.Fatalf("Parse = %v, want a *Problem", err)
				}
				if pr.Field != tt.field {
					t.Errorf("rejected field %q, want %q", pr.Field, tt.field)
				}
				if v := strings.Trim(tt.value, `"`); len(v) > 3 && strings.Contains(pr.Reason, v) {
					t.Errorf("reason %q quotes the value", pr.Reason)
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			got, _ := json.Marshal(r.Changes.Set[tt.field])
			if string(got) != tt.want {
				t.Errorf("Set[%s] = %s, want %s", tt.field, got, tt.want)
			}
		})
	}
}

func TestParseCompanyPrefixCase(t *testing.T) {
	r, err := customer.NewParser(acme).Parse([]byte(`{"email": "a@example.com", "acme__size": "M"}`))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]any{"email": "a@example.com", "ACME__size": "M"}, r.Changes.Set); diff != "" {
		t.Errorf("Set (-want +got):\n%s", diff)
	}
}
