package values_test

import (
	"encoding/json"
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
