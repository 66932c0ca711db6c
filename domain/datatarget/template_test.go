package datatarget_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/clientele/clientele/domain/datatarget"
)

func TestTemplate(t *testing.T) {
	msgs := []json.RawMessage{json.RawMessage(`{"n":1}`), json.RawMessage(`{"n":2}`)}
	tests := []struct {
		name, content string
		batched       bool
		msgs          []json.RawMessage
		want          string
	}{
		{"whole content, batched", `"{(data)}"`, true, msgs, `[{"n":1},{"n":2}]`},
		{"whole content, one message", `"{(data)}"`, false, msgs[:1], `{"n":1}`},
		{"batched, one message is a list", `"{(data)}"`, true, msgs[:1], `[{"n":1}]`},
		{"nested, key order kept", `{"z": 1, "items": "{(data)}", "a": {"deep": ["x", "{(data)}"]}}`, true, msgs,
			`{"z":1,"items":[{"n":1},{"n":2}],"a":{"deep":["x",[{"n":1},{"n":2}]]}}`},
		{"a key is not a placeholder", `{"{(data)}": "{(data)}"}`, false, msgs[:1], `{"{(data)}":{"n":1}}`},
		{"inside a longer string: left alone", `{"s": "x {(data)}"}`, false, msgs[:1], `{"s":"x {(data)}"}`},
		{"escaped quotes", `{"s": "a\"{(data)}\"", "d": "{(data)}"}`, false, msgs[:1], `{"s":"a\"{(data)}\"","d":{"n":1}}`},
		{"no placeholder", `{"static": true}`, false, msgs[:1], `{"static":true}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tmpl, err := datatarget.CompileTemplate(json.RawMessage(tt.content))
			if err != nil {
				t.Fatal(err)
			}
			var data, body bytes.Buffer
			datatarget.BatchData(&data, tt.batched, tt.msgs)
			tmpl.Render(&body, data.Bytes())
			if body.String() != tt.want {
				t.Errorf("body %s, want %s", body.String(), tt.want)
			}
			if !json.Valid(body.Bytes()) {
				t.Errorf("body is not JSON: %s", body.String())
			}
		})
	}
}

func TestTemplateRejectsBadJSON(t *testing.T) {
	for _, c := range []string{``, `{`, `{"a":}`} {
		if _, err := datatarget.CompileTemplate(json.RawMessage(c)); err == nil {
			t.Errorf("CompileTemplate(%q) accepted", c)
		}
	}
}
