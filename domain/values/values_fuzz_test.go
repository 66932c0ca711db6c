package values_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/clientele/clientele/domain/fuzzcheck"
	"github.com/clientele/clientele/domain/values"
)

// zones are company timezones with every kind of offset: none, whole
// hours with summer time, half and three-quarter hours, +14 and -10.
var zones = []string{"UTC", "Europe/Helsinki", "America/St_Johns", "Asia/Kathmandu", "Pacific/Chatham", "Pacific/Kiritimati", "Pacific/Honolulu"}

func zone(tb testing.TB, i uint8) *time.Location {
	loc, err := time.LoadLocation(zones[int(i)%len(zones)])
	if err != nil {
		tb.Fatal(err)
	}
	return loc
}

// FuzzDateTime checks dates and datetimes: an accepted datetime is in the
// stored form, re-parses to the same instant in any company zone (the
// normal form is accepted again unchanged), and does not depend on the
// company zone when it has its own; an accepted date is accepted
// unchanged, and is midnight as a datetime in UTC.
func FuzzDateTime(f *testing.F) {
	for _, s := range []string{
		"2024-07-01", "2024-07-01T12:00:00", "2024-07-01 12:00:00.5", "2024-07-01T12:00:00Z",
		"2024-07-01T12:00:00.1234567-01:00", "2024-03-31 03:30:00", "0001-01-01", "9999-12-31T23:59:59+14:00",
		" 2024-02-29T00:00:00+05:45 ", "2024-07-01T12:00", "2024-13-01", "1990-02-28",
	} {
		f.Add(s, uint8(1))
	}
	f.Fuzz(func(t *testing.T, s string, z uint8) {
		loc := zone(t, z)
		out, reason := values.DateTime(s, loc)
		if d, dateReason := values.Date(s); dateReason == "" {
			fuzzcheck.Text(t, "date", d)
			if d != strings.TrimSpace(s) {
				t.Fatalf("Date(%q) = %q, want the date as sent", s, d)
			}
			if again, r := values.Date(d); again != d || r != "" {
				t.Fatalf("Date(%q) = %q %q, want it unchanged", d, again, r)
			}
			// A date is midnight; in UTC, where no offset moves it past
			// a limit of the stored years, it is accepted as a datetime.
			if dt, r := values.DateTime(s, time.UTC); dt != d+"T00:00:00Z" {
				t.Fatalf("Date accepts %q, DateTime in UTC makes it %q %q", s, dt, r)
			}
		}
		if reason != "" {
			if out != "" {
				t.Fatalf("DateTime(%q) refused with a value %q", s, out)
			}
			return
		}
		fuzzcheck.Text(t, "datetime", out)
		instant, err := time.Parse(time.RFC3339Nano, out)
		if err != nil || !strings.HasSuffix(out, "Z") || instant.Format(values.DateTimeLayout) != out {
			t.Fatalf("DateTime(%q) = %q, not in the stored form (%v)", s, out, err)
		}
		for i := range zones {
			if again, r := values.DateTime(out, zone(t, uint8(i))); again != out {
				t.Fatalf("DateTime(%q) = %q, which in %s re-parses as %q %q", s, out, zones[i], again, r)
			}
		}
		if strings.HasSuffix(strings.TrimSpace(s), "Z") {
			if other, _ := values.DateTime(s, zone(t, z+1)); other != out {
				t.Fatalf("DateTime(%q) with its own zone depends on the company zone: %q and %q", s, out, other)
			}
		}
	})
}

// FuzzCodes checks the parsers of identities and codes: an accepted value
// is accepted again unchanged (idempotence), is in its normal form (an
// email lower-case, a country or currency upper-case letters, a language
// lower-case) and holds no U+0000.
func FuzzCodes(f *testing.F) {
	for _, s := range []string{
		"Ann@Example.COM", " a.b+c@x.fi ", "ann@[10.0.0.1]", "\"a b\"@x.fi", "uk", "FI", "en_US", "zh-Hant-TW", "sgn-BE-FR",
		"eur", "true", "0", "x", "",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !utf8.ValidString(s) || strings.ContainsRune(s, 0) {
			return // not what a record decodes to (DecodeRecord refuses U+0000)
		}
		parsers := map[string]func(any) (string, string){
			"Email": values.Email, "Country": values.Country, "Language": values.Language, "Currency": values.Currency,
			"Text": values.Text,
		}
		for name, parse := range parsers {
			out, reason := parse(s)
			if reason != "" {
				continue
			}
			fuzzcheck.Text(t, name, out)
			if again, r := parse(out); again != out {
				t.Fatalf("%s(%q) = %q, which re-parses as %q %q", name, s, out, again, r)
			}
			switch name {
			case "Email":
				if out != strings.ToLower(out) || strings.Count(out, "@") < 1 {
					t.Fatalf("Email(%q) = %q, not a lower-case address", s, out)
				}
			case "Country", "Currency":
				if strings.Trim(out, "ABCDEFGHIJKLMNOPQRSTUVWXYZ") != "" {
					t.Fatalf("%s(%q) = %q, not upper-case letters", name, s, out)
				}
			case "Language":
				if out != strings.ToLower(out) || out == "" {
					t.Fatalf("Language(%q) = %q, not a lower-case code", s, out)
				}
			}
		}
		if b, reason := values.Bool(s); reason == "" {
			if again, r := values.Bool(map[bool]string{true: "true", false: "false"}[b]); again != b || r != "" {
				t.Fatalf("Bool(%q) = %v, which does not re-parse", s, b)
			}
		}
		if l, reason := values.StringList(s); reason == "" {
			for _, e := range l {
				if values.Blank(e) {
					t.Fatalf("StringList(%q) kept a blank element", s)
				}
			}
		}
	})
}

// FuzzCompanyField checks company-specific keys: an accepted key's stored
// name carries the company's short name as configured, is accepted again
// unchanged, and is the same whatever the case of the prefix sent; a key
// refused (another company's, no company field at all) is ignored by the
// parsers under a name that looks like a field name or UnnamedField.
func FuzzCompanyField(f *testing.F) {
	for _, k := range []string{"ACME__size", "acme__size", "AcMe__x.y", "OTHER__size", "ACME__", "__size", "size", "ACME____x"} {
		f.Add("ACME", k)
	}
	f.Fuzz(func(t *testing.T, short, key string) {
		field, ok := values.CompanyField(short, key)
		if !ok {
			var ig values.Ignored
			ig.Ignore(key)
			if len(ig) != 1 || ig[0] != values.UnnamedField && values.SafeName(ig[0]) != ig[0] {
				t.Fatalf("the refused key %q is ignored as %q", key, ig)
			}
			return
		}
		if !strings.HasPrefix(field, short+"__") || len(field) <= len(short)+2 {
			t.Fatalf("CompanyField(%q, %q) = %q, not %s__<name>", short, key, field, short)
		}
		if again, ok := values.CompanyField(short, field); again != field || !ok {
			t.Fatalf("CompanyField(%q, %q) = %q, which re-parses as %q %v", short, key, field, again, ok)
		}
		prefix, name, _ := strings.Cut(key, "__")
		for _, p := range []string{strings.ToUpper(prefix), strings.ToLower(prefix)} {
			if !strings.EqualFold(p, prefix) {
				continue // a letter whose case changes its length or folding
			}
			if other, ok := values.CompanyField(short, p+"__"+name); other != field || !ok {
				t.Fatalf("CompanyField(%q, %q) = %q, but with the prefix %q: %q %v", short, key, field, p, other, ok)
			}
		}
	})
}

// FuzzDecodeRecord checks the decoding every record parser starts with: a
// refusal names no field that does not look like one (a key may be
// personal data, and rejections are stored); an accepted record is an
// object without U+0000 that encodes to valid JSON and decodes back to
// itself, every digit of its numbers kept.
func FuzzDecodeRecord(f *testing.F) {
	for _, s := range []string{
		`{"a":"x","n":12345678901234567890}`, `[1]`, `{"a":"\u0000"}`, `{"a\u0000":1}`, `{"a":"\\u0000"}`,
		`{"a":{"b":["\ud800",1e400,-0.0]}}`, `{"a":1} trailing`, `{"a":"\xff"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		m, field, reason := values.DecodeRecord(raw)
		if reason != "" {
			if m != nil || field != "" && values.SafeName(field) != field {
				t.Fatalf("refused (%q %q) with a record %v, or naming a field that does not look like one", field, reason, m)
			}
			return
		}
		b := fuzzcheck.JSON(t, "record", m)
		back, field, reason := values.DecodeRecord(b)
		if reason != "" || !reflect.DeepEqual(back, m) {
			t.Fatalf("record %q encodes as %s, which decodes as %v (%q %q)", raw, b, back, field, reason)
		}
		for k, v := range m {
			if n, ok := v.(json.Number); ok && !json.Valid([]byte(n)) {
				t.Fatalf("field %q is the number %q, not JSON", k, n)
			}
		}
	})
}
