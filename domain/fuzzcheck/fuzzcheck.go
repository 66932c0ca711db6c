// Package fuzzcheck holds the properties every fuzz target checks of what
// a parser accepted or refused, so that each target states only the rules
// of its own parser. It is imported by tests only.
//
// What a parser accepts is stored as JSON (event data, read-model
// documents) and shown to clients: it must encode to valid JSON in valid
// UTF-8 without U+0000, which PostgreSQL's text and jsonb cannot hold. A
// refusal must be a *values.Problem whose field, when it names one, looks
// like a field name: rejections are stored, and a key that looks like
// data may be personal data. So must the names of the fields a parser
// ignored, which the import run shows.
//
// It sits in domain, beside the parsers it checks, because the properties
// are the domain's (values.Problem, values.SafeName): it imports the
// standard library and domain/values only.
package fuzzcheck

import (
	"bytes"
	"encoding/json"
	"errors"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/clientele/clientele/domain/values"
)

// JSON encodes v (what a parser accepted) and fails tb when the encoding
// is not valid JSON in valid UTF-8, or when a key or string in it holds
// U+0000. It returns the encoding.
func JSON(tb testing.TB, what string, v any) []byte {
	tb.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		tb.Fatalf("%s does not encode to JSON: %v", what, err)
	}
	if !json.Valid(b) || !utf8.Valid(b) {
		tb.Fatalf("%s encodes to invalid JSON or UTF-8: %q", what, b)
	}
	// Decoding is the sure way to see every string: the encoding escapes
	// U+0000 as \u0000, and a backslash before it may be escaped too.
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var back any
	if err := d.Decode(&back); err != nil {
		tb.Fatalf("%s: its JSON does not decode: %v", what, err)
	}
	if path, ok := nulAt(back, ""); ok {
		tb.Fatalf("%s holds U+0000 at %q: %q", what, path, b)
	}
	return b
}

// Text fails tb when s, a string a parser accepted, is not valid UTF-8 or
// holds U+0000.
func Text(tb testing.TB, what, s string) {
	tb.Helper()
	if !utf8.ValidString(s) || strings.ContainsRune(s, 0) {
		tb.Fatalf("%s %q is not valid UTF-8 or holds U+0000", what, s)
	}
}

// Rejection fails tb unless err is a *values.Problem with a reason and,
// when it names a field, a field that looks like a field name.
func Rejection(tb testing.TB, err error) {
	tb.Helper()
	var p *values.Problem
	if !errors.As(err, &p) {
		tb.Fatalf("refused with %T %v, want a *values.Problem", err, err)
	}
	if p.Reason == "" {
		tb.Fatalf("refused without a reason: %+v", p)
	}
	if p.Field != "" && values.SafeName(p.Field) != p.Field {
		tb.Fatalf("the rejection names a field that does not look like one: %q", p.Field)
	}
}

// Ignored fails tb unless ig, the fields a parser ignored in a record it
// accepted, is sorted, lists each name once and at most values.MaxIgnored
// of them, and names only what looks like a field name (or is
// values.UnnamedField): the names are stored and shown on the import run,
// and a key that looks like data may be personal data.
func Ignored(tb testing.TB, ig values.Ignored) {
	tb.Helper()
	if len(ig) > values.MaxIgnored {
		tb.Fatalf("%d ignored fields listed, at most %d allowed", len(ig), values.MaxIgnored)
	}
	for i, name := range ig {
		if name != values.UnnamedField && values.SafeName(name) != name {
			tb.Fatalf("an ignored field is listed as %q, which does not look like a field name", name)
		}
		if i > 0 && ig[i-1] >= name {
			tb.Fatalf("ignored fields %q are not sorted and distinct", ig)
		}
	}
}

// decimalRE is a decimal number as clients write amounts and quantities:
// a sign, digits with a point, an exponent. No base prefixes (0x10),
// digit separators (1_000) or fractions (21/2).
var decimalRE = regexp.MustCompile(`^[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?$`)

// Decimal reports whether s, spaces around it aside, is a decimal number:
// the oracle of the number parsers, which must accept nothing else.
func Decimal(s string) bool { return decimalRE.MatchString(strings.TrimSpace(s)) }

// nulAt returns the path of the first key or string of v holding U+0000.
func nulAt(v any, path string) (string, bool) {
	switch v := v.(type) {
	case string:
		return path, strings.ContainsRune(v, 0)
	case []any:
		for _, e := range v {
			if p, ok := nulAt(e, path+"[]"); ok {
				return p, true
			}
		}
	case map[string]any:
		for k, e := range v {
			if strings.ContainsRune(k, 0) {
				return path + "." + k, true
			}
			if p, ok := nulAt(e, path+"."+k); ok {
				return p, true
			}
		}
	}
	return "", false
}
