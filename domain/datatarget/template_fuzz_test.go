package datatarget_test

import (
	"bytes"
	"encoding/json"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"github.com/clientele/clientele/domain/datatarget"
)

// FuzzTemplate checks outlet templates: any JSON content in UTF-8
// compiles and nothing else does, and rendering it with any message, batched or not,
// is valid JSON in UTF-8 that is the content with every string
// "{(data)}" (but keys, however escaped) replaced by the data.
func FuzzTemplate(f *testing.F) {
	for _, s := range []struct{ content, message string }{
		{`"{(data)}"`, `{"n":1}`},
		{`{"z": 1, "items": "{(data)}", "a": {"deep": ["x", "{(data)}"]}}`, `{"s":"a\"b\\"}`},
		{`{"{(data)}": "{(data)}", "s": "x {(data)}", "e": "a\"{(data)}\"", "u": "\u007b(data)}"}`, `{"k":[1,2.50,null]}`},
		{`{"a":1,"a":"{(data)}"}`, `{}`}, {`[1, true, null, "{(data)}", {"x": "{(data)}"}]`, ` { "sp" : "\u2028" } `},
		{`{`, `{}`}, {``, `{}`}, {`"{(data)}" "{(data)}"`, `{}`},
	} {
		f.Add([]byte(s.content), []byte(s.message))
	}
	f.Fuzz(func(t *testing.T, content, message []byte) {
		tmpl, err := datatarget.CompileTemplate(content)
		if valid := json.Valid(content) && utf8.Valid(content); (err == nil) != valid {
			t.Fatalf("CompileTemplate(%q): %v, but it is valid JSON in UTF-8: %v", content, err, valid)
		}
		if err != nil {
			return
		}
		msgs, err := datatarget.CheckMessages([]json.RawMessage{message})
		if err != nil {
			msgs = []json.RawMessage{json.RawMessage(`{"n":1}`)}
		}
		want, placeholders := substitute(t, decode(t, content), decode(t, msgs[0]))
		if tmpl.HasPlaceholder() != (placeholders > 0) {
			t.Fatalf("template %q: HasPlaceholder %v, but it has %d", content, tmpl.HasPlaceholder(), placeholders)
		}
		for _, batched := range []bool{false, true} {
			var data, body bytes.Buffer
			datatarget.BatchData(&data, batched, msgs)
			tmpl.Render(&body, data.Bytes())
			if !json.Valid(body.Bytes()) || utf8.Valid(msgs[0]) && !utf8.Valid(body.Bytes()) {
				t.Fatalf("template %q with %q renders %q, not JSON in UTF-8", content, msgs[0], body.Bytes())
			}
			want := want
			if batched {
				want, _ = substitute(t, decode(t, content), []any{decode(t, msgs[0])})
			}
			if diff := cmp.Diff(want, decode(t, body.Bytes())); diff != "" {
				t.Fatalf("template %q with %q renders %q (-want +got):\n%s", content, msgs[0], body.Bytes(), diff)
			}
		}
	})
}

// substitute returns v with data in place of every string "{(data)}",
// and how many it replaced.
func substitute(t *testing.T, v, data any) (any, int) {
	switch v := v.(type) {
	case string:
		if v == datatarget.Placeholder {
			return data, 1
		}
	case []any:
		n := 0
		for i, e := range v {
			var k int
			v[i], k = substitute(t, e, data)
			n += k
		}
		return v, n
	case map[string]any:
		n := 0
		for key, e := range v {
			var k int
			v[key], k = substitute(t, e, data)
			n += k
		}
		return v, n
	}
	return v, 0
}

func decode(t *testing.T, raw []byte) any {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		t.Fatalf("decode %q: %v", raw, err)
	}
	return v
}
