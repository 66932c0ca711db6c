package console

import (
	"strings"
	"testing"
	"time"
)

// TestIndentBoundedDeep: a message nested 9,990 levels deep (20 KB, as
// the API accepts it) shows its first shownDepth levels and then [...],
// in a few hundred bytes and linear time, where json.Indent writes 200
// MB; its depth doubled costs no more than about twice.
func TestIndentBoundedDeep(t *testing.T) {
	deep := func(n int) []byte {
		return []byte(`{"a":` + strings.Repeat("[", n) + strings.Repeat("]", n) + `}`)
	}
	text, cut, steps := indentBounded(deep(9990), shownValueBytes)
	if !cut || len(text) > 1000 || !strings.Contains(text, "[...]") {
		t.Fatalf("cut %v, %d bytes:\n%s", cut, len(text), text)
	}
	if steps != len(deep(9990)) {
		t.Errorf("%d steps for %d bytes", steps, len(deep(9990)))
	}
	if lines := strings.Count(text, "\n"); lines > 2*shownDepth+2 {
		t.Errorf("%d lines", lines)
	}
	timeOf := func(raw []byte) time.Duration {
		start := time.Now()
		for range 20 {
			indentBounded(raw, shownValueBytes)
		}
		return time.Since(start)
	}
	small, large := timeOf(deep(100_000)), timeOf(deep(800_000))
	// Eight times the input: linear is about 8 times the time, quadratic 64.
	if large > 24*small+10*time.Millisecond {
		t.Errorf("8 times the depth took %v against %v: not linear", large, small)
	}
}

// TestShownBounds: a long string, a wide array and a page of many values
// stop at their bounds, marked cut; what fits is shown whole.
func TestShownBounds(t *testing.T) {
	b := newBudget()
	long := b.json([]byte(`{"s": "`+strings.Repeat("x", 1<<20)+`"}`), shownValueBytes)
	if !long.Cut || len(long.Text) > shownValueBytes || !strings.HasSuffix(long.Text, ellipsis) {
		t.Errorf("long string: cut %v, %d bytes", long.Cut, len(long.Text))
	}
	wide := b.json([]byte(`[`+strings.Repeat(`1,`, 1<<20)+`1]`), shownValueBytes)
	if !wide.Cut || len(wide.Text) > shownValueBytes {
		t.Errorf("wide array: cut %v, %d bytes", wide.Cut, len(wide.Text))
	}
	small := b.json([]byte(`{"a":1}`), shownValueBytes)
	if small.Cut || small.Text != "{\n  \"a\": 1\n}" {
		t.Errorf("small: %+v", small)
	}
	notJSON := b.json([]byte("not json"), shownValueBytes)
	if notJSON.Cut || notJSON.Text != "not json" {
		t.Errorf("not JSON: %+v", notJSON)
	}
	list := b.cell([]any{"a", "b", strings.Repeat("é", 1000)})
	if !list.Cut || len(list.Text) > shownCellBytes || !strings.HasPrefix(list.Text, "a, b, é") {
		t.Errorf("cell: %+v", list)
	}
	total := 0
	for range 1000 {
		s := b.json([]byte(`["`+strings.Repeat("y", 4000)+`"]`), shownValueBytes)
		total += len(s.Text)
	}
	if total > shownPageBytes {
		t.Errorf("a page showed %d bytes of values, over %d", total, shownPageBytes)
	}
	if s := b.json([]byte(`[1]`), shownValueBytes); !s.Cut || s.Text != "" {
		t.Errorf("a page past its budget shows %+v", s)
	}
}

// TestShownCharacters: strings show their characters, not the \u escapes
// they were stored with ("Ääkkönen", an emoji from its surrogate pair),
// in indented JSON and in cells; what cannot be seen (a control or
// format character, a lone surrogate) and what JSON must escape stay
// escaped, so the text is still the same JSON value.
func TestShownCharacters(t *testing.T) {
	b := newBudget()
	got := b.json([]byte(`{"name":"\u00c4\u00e4kk\u00f6nen","smile":"\ud83d\ude00","url":"a\/b","hidden":"\u202e\u0000\ud800\"\\\n"}`), shownValueBytes)
	want := "{\n  \"name\": \"Ääkkönen\",\n  \"smile\": \"😀\",\n  \"url\": \"a/b\",\n  \"hidden\": \"\\u202e\\u0000\\ud800\\\"\\\\\\n\"\n}"
	if got.Text != want {
		t.Errorf("shown\n%s\nwant\n%s", got.Text, want)
	}
	// A cell of an object (compact JSON of a decoded document, which
	// json.Marshal writes with \u003c for <) shows the characters too.
	if c := b.cell(map[string]any{"a": "<Ääkkönen>"}); c.Text != "{\n  \"a\": \"<Ääkkönen>\"\n}" {
		t.Errorf("cell: %q", c.Text)
	}
}
