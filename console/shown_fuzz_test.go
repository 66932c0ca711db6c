package console

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// FuzzIndentBounded: any bytes, JSON or not, render within the bytes
// asked for, reading each input byte at most once; JSON that fits is
// exactly what json.Indent writes for it.
func FuzzIndentBounded(f *testing.F) {
	for _, s := range []string{
		`{}`, `[]`, `{"a": [1, 2, {"b": null}], "c": "d\"e"}`, `"x"`, `12e3`, `{ }`, `[ [ ] ]`,
		strings.Repeat("[", 200) + strings.Repeat("]", 200),
		strings.Repeat(`{"a":`, 50) + `1` + strings.Repeat("}", 50),
		`["` + strings.Repeat("é", 5000) + `"]`,
		`[` + strings.Repeat(`1,`, 3000) + `1]`,
		`{"unterminated": "`, `{"name": "\u00c4\u00e4kk\u00f6nen", "e": "\ud83d\ude00", "x": "\u202e\u0000\"\\\/"}`, `"\ud800"`, `]]]`, `{"a" 1}`, "\xff\xfe",
	} {
		f.Add([]byte(s), 300)
	}
	f.Fuzz(func(t *testing.T, raw []byte, limit int) {
		limit = max(0, limit%(shownValueBytes*2))
		text, cut, steps := indentBounded(raw, limit)
		if len(text) > limit {
			t.Fatalf("%d bytes shown, over the limit of %d", len(text), limit)
		}
		if steps > len(raw) {
			t.Fatalf("%d steps for %d bytes", steps, len(raw))
		}
		if !json.Valid(raw) {
			return
		}
		var want bytes.Buffer
		if err := json.Indent(&want, raw, "", "  "); err != nil {
			t.Fatal(err)
		}
		got := text
		if !cut {
			// The same JSON value, as json.Indent lays it out; a string
			// may show its characters instead of their \u escapes.
			if !sameJSON(got, raw) {
				t.Fatalf("shown\n%s\nis not the value of\n%s", got, raw)
			}
			if !bytes.Contains(raw, []byte(`\`)) && got != strings.TrimSpace(want.String()) {
				t.Fatalf("shown\n%s\nwant\n%s", got, want.String())
			}
		}
		if cut && len(want.String()) <= limit && !tooDeep(raw) {
			t.Fatalf("cut although json.Indent writes %d bytes of the %d allowed:\n%s", want.Len(), limit, got)
		}
	})
}

// tooDeep reports whether JSON text nests deeper than a page shows.
func tooDeep(raw []byte) bool {
	d := json.NewDecoder(bytes.NewReader(raw))
	depth := 0
	for {
		t, err := d.Token()
		if err != nil {
			return false
		}
		switch t {
		case json.Delim('{'), json.Delim('['):
			if depth++; depth > shownDepth {
				return true
			}
		case json.Delim('}'), json.Delim(']'):
			depth--
		}
	}
}

// sameJSON reports whether shown is JSON text of the same value as raw.
func sameJSON(shown string, raw []byte) bool {
	decode := func(b []byte) (any, bool) {
		d := json.NewDecoder(bytes.NewReader(b))
		d.UseNumber()
		var v any
		return v, d.Decode(&v) == nil
	}
	a, okA := decode([]byte(shown))
	b, okB := decode(raw)
	return okA && okB && reflect.DeepEqual(a, b)
}
