package values_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/clientele/clientele/domain/values"
)

func TestParsers(t *testing.T) {
	helsinki, err := time.LoadLocation("Europe/Helsinki")
	if err != nil {
		t.Fatal(err)
	}
	type parser func(any) (any, string)
	of := func(f func(any) (string, string)) parser {
		return func(v any) (any, string) { return values.Any(f(v)) }
	}
	cases := []struct {
		name  string
		parse parser
		in    any
		want  any // nil: rejected
	}{
		{"text number kept as text", of(values.Text), json.Number("12345"), "12345"},
		{"text refuses bool", of(values.Text), true, nil},
		{"email lower-cased", of(values.Email), " Ann@Example.COM ", "ann@example.com"},
		{"email with display name", of(values.Email), "Ann <ann@example.com>", nil},
		{"email without dot in domain", of(values.Email), "ann@localhost", nil},
		{"country canonical", of(values.Country), "uk", "GB"},
		{"country three letters", of(values.Country), "FIN", nil},
		{"country not a country", of(values.Country), "EU", nil},
		{"language locale", of(values.Language), "en_US", "en"},
		{"language word", of(values.Language), "english", nil},
		{"currency upper-cased", of(values.Currency), "eur", "EUR"},
		{"currency digits", of(values.Currency), "E1R", nil},
		{"date", of(values.Date), "1990-02-28", "1990-02-28"},
		{"date impossible", of(values.Date), "1990-02-30", nil},
		{"datetime naive in company zone", func(v any) (any, string) { return values.Any(values.DateTime(v, helsinki)) }, "2026-07-01 12:00:00", "2026-07-01T09:00:00Z"},
		{"datetime date is midnight there", func(v any) (any, string) { return values.Any(values.DateTime(v, helsinki)) }, "2026-01-01", "2025-12-31T22:00:00Z"},
		{"datetime with offset", func(v any) (any, string) { return values.Any(values.DateTime(v, helsinki)) }, "2026-07-01T12:00:00.5+02:00", "2026-07-01T10:00:00.5Z"},
		{"datetime without seconds", func(v any) (any, string) { return values.Any(values.DateTime(v, helsinki)) }, "2026-07-01T12:00", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, reason := tc.parse(tc.in)
			if tc.want == nil {
				if reason == "" {
					t.Fatalf("accepted as %v, want a rejection", got)
				}
				return
			}
			if reason != "" || got != tc.want {
				t.Fatalf("got %v (%q), want %v", got, reason, tc.want)
			}
		})
	}
}

func TestBoolAndLists(t *testing.T) {
	for in, want := range map[any]bool{true: true, "TRUE": true, "1": true, json.Number("0"): false, "false": false} {
		if got, reason := values.Bool(in); reason != "" || got != want {
			t.Errorf("Bool(%v) = %v %q, want %v", in, got, reason, want)
		}
	}
	if _, reason := values.Bool("yes"); reason == "" {
		t.Error(`Bool("yes") accepted`)
	}
	got, reason := values.StringList([]any{"a", nil, json.Number("2"), " "})
	if reason != "" || len(got) != 2 || got[0] != "a" || got[1] != "2" {
		t.Errorf("StringList = %v %q", got, reason)
	}
	if got, _ := values.StringList("single"); len(got) != 1 {
		t.Errorf("a single string is a list of one: %v", got)
	}
	if _, reason := values.StringList([]any{true}); reason == "" {
		t.Error("a list of booleans accepted")
	}
	if !values.Blank("  ") || values.Blank(nil) || values.Blank("x") {
		t.Error("Blank is wrong")
	}
}

func TestDecodeRecord(t *testing.T) {
	for name, tc := range map[string]struct {
		raw, field string
		ok         bool
	}{
		"object":          {`{"a":"x","n":12345678901234567890}`, "", true},
		"not an object":   {`[1]`, "", false},
		"NUL in a string": {`{"a":"ok","b":"x\u0000y"}`, "b", false},
		"NUL in a list":   {`{"tags":["a","\u0000"]}`, "tags", false},
		"NUL in a nested": {`{"versions":{"language":{"fi":{"title":"\u0000"}}}}`, "versions", false},
		"NUL in a key":    {`{"a\u0000":"x"}`, "", false},
		"escaped text":    {`{"a":"\\u0000"}`, "", true},
	} {
		t.Run(name, func(t *testing.T) {
			m, field, reason := values.DecodeRecord([]byte(tc.raw))
			if (reason == "") != tc.ok || field != tc.field {
				t.Fatalf("field %q reason %q, want ok=%v field %q", field, reason, tc.ok, tc.field)
			}
			if tc.ok && m == nil {
				t.Fatal("no map")
			}
		})
	}
	m, _, _ := values.DecodeRecord([]byte(`{"n":12345678901234567890}`))
	if n, ok := m["n"].(json.Number); !ok || n.String() != "12345678901234567890" {
		t.Fatalf("number lost digits: %v", m["n"])
	}
}

func TestDateRange(t *testing.T) {
	helsinki, err := time.LoadLocation("Europe/Helsinki")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		in   string
		loc  *time.Location
		want string // "": rejected for its range
	}{
		{"9999-12-31T23:59:59.999999Z", time.UTC, "9999-12-31T23:59:59.999999Z"},
		{"9999-12-31T23:30:00+01:00", time.UTC, "9999-12-31T22:30:00Z"},
		{"9999-12-31T23:30:00-01:00", time.UTC, ""},
		{"9999-12-31 23:30:00", helsinki, "9999-12-31T21:30:00Z"},
		{"0001-01-01", time.UTC, "0001-01-01T00:00:00Z"},
		{"0001-01-01T00:30:00+01:00", time.UTC, ""},
		{"0001-01-01T00:30:00-01:00", time.UTC, "0001-01-01T01:30:00Z"},
		{"0001-01-01", helsinki, ""}, // midnight there is year 0 in UTC
		{"0000-06-01", time.UTC, ""},
	} {
		got, reason := values.DateTime(tc.in, tc.loc)
		switch {
		case tc.want == "" && reason != values.ReasonDateTimeRange:
			t.Errorf("DateTime(%s in %s) = %q %q, want the range rejection", tc.in, tc.loc, got, reason)
		case tc.want != "" && (reason != "" || got != tc.want):
			t.Errorf("DateTime(%s in %s) = %q %q, want %s", tc.in, tc.loc, got, reason, tc.want)
		}
	}
	for in, ok := range map[string]bool{"0001-01-01": true, "9999-12-31": true, "0000-12-31": false} {
		got, reason := values.Date(in)
		if ok != (reason == "") || (!ok && reason != values.ReasonDateRange) || (ok && got != in) {
			t.Errorf("Date(%s) = %q %q", in, got, reason)
		}
	}
}

func TestNumeric(t *testing.T) {
	zeros := strings.Repeat("0", 20000)
	for _, tc := range []struct {
		in      string
		printed int    // when accepted
		reason  string // "" accepted
	}{
		{"0", 1, ""},
		{"-0", 1, ""},
		{"-0.0", 3, ""},
		{"-12.50", 6, ""},
		{"1e5", 6, ""},
		{"1E+5", 6, ""},
		{"-1.5e-3", 7, ""},
		{"1e131071", 131072, ""},
		{"1e131072", 0, values.ReasonNumberTooLarge},
		{"0.0001e131075", 131072, ""},
		{"0.0001e131076", 0, values.ReasonNumberTooLarge},
		{"1e-16383", 16385, ""},
		{"1e-16384", 0, values.ReasonNumberScale},
		{"1." + zeros, 0, values.ReasonNumberScale},
		{"1." + zeros + "e20000", 1 + 20000, ""},
		{"0e999999", 1, ""},
		{"0e-16384", 0, values.ReasonNumberScale},
		{"0e1073741822", 1, ""},
		{"0e1073741823", 0, values.ReasonNumberExponent},
		{"0e0000000000000000000000000005", 1, ""},
		{"1e99999999999999999999", 0, values.ReasonNumberExponent},
		{"01", 0, "must be a JSON number"},
		{"1.", 0, "must be a JSON number"},
		{"1e", 0, "must be a JSON number"},
		{"NaN", 0, "must be a JSON number"},
	} {
		printed, reason := values.Numeric(tc.in)
		if reason != tc.reason || (reason == "" && printed != tc.printed) {
			t.Errorf("Numeric(%.30s) = %d %q, want %d %q", tc.in, printed, reason, tc.printed, tc.reason)
		}
	}
}

func TestStorable(t *testing.T) {
	big8 := strings.TrimSuffix(strings.Repeat("1e131071,", 8), ",")
	for name, tc := range map[string]struct {
		raw, field, reason string
	}{
		"plain":                    {`{"a":"x","n":[1,2.5e-3]}`, "", ""},
		"surrogate pair":           {`{"a":"\ud83d\ude00 \uD800\uDC00"}`, "", ""},
		"escaped backslash":        {`{"a":"\\ud800","b":"\\\\udc00"}`, "", ""},
		"lone high":                {`{"z":1,"a":"x\ud800"}`, "a", values.ReasonSurrogate},
		"high then high":           {`{"a":"\ud800\ud800\udc00"}`, "a", values.ReasonSurrogate},
		"high at the end":          {`{"a":"\udbff"}`, "a", values.ReasonSurrogate},
		"high then a letter":       {`{"a":"\ud800x"}`, "a", values.ReasonSurrogate},
		"lone low":                 {`{"a":["\udc00"]}`, "a", values.ReasonSurrogate},
		"after an escaped quote":   {`{"a":"\"\\\udfff"}`, "a", values.ReasonSurrogate},
		"in a key":                 {`{"\ud800":1}`, "", values.ReasonSurrogate},
		"not an object":            {`["\ud800"]`, "", values.ReasonSurrogate},
		"invalid UTF-8":            {"{\"a\":1,\"b\":\"\xc3\x28\"}", "b", values.ReasonUTF8},
		"NUL nested":               {`{"a":{"b":["\u0000"]}}`, "a", values.ReasonNUL},
		"number nested":            {`{"a":{"b":[1e131072]}}`, "a", values.ReasonNumberTooLarge},
		"eight at the limit":       {`{"a":[` + big8 + `]}`, "", ""},
		"nine at the limit":        {`{"a":[` + big8 + `],"b":1e131071}`, "b", values.ReasonNumbersTooLong},
		"first field in key order": {`{"b":1e-16384,"a":1e131072}`, "a", values.ReasonNumberTooLarge},
		"shrinking numbers pay for nothing": {`{"a":[` + big8 + `],"b":[` + strings.TrimSuffix(strings.Repeat("1e5,", 30), ",") +
			`],"c":[` + strings.TrimSuffix(strings.Repeat("1.000000000000000000e+0,", 100), ",") + `]}`, "b", values.ReasonNumbersTooLong},
	} {
		t.Run(name, func(t *testing.T) {
			field, reason := values.Storable([]byte(tc.raw))
			if field != tc.field || reason != tc.reason {
				t.Fatalf("field %q reason %q, want %q %q", field, reason, tc.field, tc.reason)
			}
			m, field, reason := values.DecodeRecord([]byte(tc.raw))
			if tc.raw[0] == '{' && (field != tc.field || reason != tc.reason || (reason == "") != (m != nil)) {
				t.Fatalf("DecodeRecord: field %q reason %q, want %q %q", field, reason, tc.field, tc.reason)
			}
		})
	}
}

// BenchmarkDecodeRecordWorstCase decodes records of about 1 MiB (the
// largest staged) made of what the checks look at most closely: numbers
// at the limits, surrogate pairs, a mantissa of a million digits. The cost
// is linear in the record, with no conversion of the numbers.
func BenchmarkDecodeRecordWorstCase(b *testing.B) {
	for name, raw := range map[string]string{
		"numbers":   `{"a":[` + strings.TrimSuffix(strings.Repeat("-1e-16383,", 100_000), ",") + `]}`,
		"pairs":     `{"a":"` + strings.Repeat(`\ud83d\ude00`, 80_000) + `"}`,
		"mantissa":  `{"a":0.` + strings.Repeat("0", 16_000) + strings.Repeat("1", 300) + "e" + strings.Repeat("0", 1_000_000) + `1}`,
		"plain 1MB": `{"a":"` + strings.Repeat("x", 1<<20) + `"}`,
	} {
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(raw)))
			for b.Loop() {
				values.DecodeRecord([]byte(raw))
			}
		})
	}
}

// TestDecodeRecordNamesOnlyFieldNames checks that a refused record's key
// is named only when it looks like a field name: a key may itself be
// personal data (a CSV whose header line is a data row).
func TestDecodeRecordNamesOnlyFieldNames(t *testing.T) {
	for _, raw := range []string{`{"ann smith": "\u0000"}`, `{"ann smith": 1e131072}`, `{"ann smith": "\ud800"}`} {
		if _, field, reason := values.DecodeRecord([]byte(raw)); reason == "" || field != "" {
			t.Errorf("%s: field %q reason %q, want a reason naming no field", raw, field, reason)
		}
		if field, reason := values.Storable([]byte(raw)); reason == "" || field != "" {
			t.Errorf("Storable(%s): field %q reason %q, want a reason naming no field", raw, field, reason)
		}
	}
}

func TestNoCustomerID(t *testing.T) {
	for _, v := range []any{nil, "", " ", "0", " 0 ", json.Number("0")} {
		if !values.NoCustomerID(v) {
			t.Errorf("NoCustomerID(%#v) = false, want true: a guest", v)
		}
	}
	for _, v := range []any{"00", "C-1", json.Number("10"), "0.0", true, []any{}} {
		if values.NoCustomerID(v) {
			t.Errorf("NoCustomerID(%#v) = true, want false", v)
		}
	}
}
