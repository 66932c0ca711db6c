package datatarget

import (
	"bytes"
	"encoding/json"
	"errors"
	"unicode/utf8"
)

// Placeholder is the string that an outlet's content template replaces by
// the data: the message, or for a batched outlet the list of messages.
const Placeholder = "{(data)}"

// Template is an outlet's content with the data placeholders cut out: the
// body is parts[0] data parts[1] data ... parts[n]. Compiling once keeps
// rendering a matter of copying bytes, with no JSON encoding per request.
type Template struct {
	parts [][]byte
}

// CompileTemplate compiles content, any JSON value. Every string value
// that is exactly "{(data)}", wherever it is (the whole content, an object
// member, an array element, at any depth), is a placeholder, however
// escaped; object keys and longer strings that merely contain it are left
// as they are. The key order and everything else of the content is kept.
// Content that is not UTF-8 is no JSON (RFC 8259) and is refused: stored,
// its invalid bytes would become U+FFFD, and the outlet would send other
// content than it was given.
func CompileTemplate(content json.RawMessage) (Template, error) {
	var buf bytes.Buffer
	if err := json.Compact(&buf, content); err != nil {
		return Template{}, err
	}
	if !utf8.Valid(content) {
		return Template{}, errors.New("datatarget: content is not UTF-8")
	}
	if buf.Len() == 0 {
		return Template{}, errors.New("datatarget: empty content")
	}
	b := buf.Bytes()
	quoted := []byte(`"` + Placeholder + `"`)
	var t Template
	last := 0
	// In compact JSON a string starts at a '"' outside any string; it is a
	// key when a ':' follows its closing quote.
	for i := 0; i < len(b); i++ {
		if b[i] != '"' {
			continue
		}
		end := stringEnd(b, i)
		isKey := end+1 < len(b) && b[end+1] == ':'
		if !isKey && isPlaceholder(b[i:end+1], quoted) {
			t.parts = append(t.parts, b[last:i])
			last = end + 1
		}
		i = end
	}
	t.parts = append(t.parts, b[last:])
	return t, nil
}

// isPlaceholder reports whether the JSON string s is the placeholder,
// written plainly (quoted) or with escapes ("\u007b(data)}").
func isPlaceholder(s, quoted []byte) bool {
	if bytes.Equal(s, quoted) {
		return true
	}
	var v string
	return bytes.IndexByte(s, '\\') >= 0 && json.Unmarshal(s, &v) == nil && v == Placeholder
}

// stringEnd returns the index of the quote that closes the string starting
// at b[start].
func stringEnd(b []byte, start int) int {
	for i := start + 1; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i
		}
	}
	return len(b) - 1
}

// HasPlaceholder reports whether the template uses the data at all.
func (t Template) HasPlaceholder() bool { return len(t.parts) > 1 }

// Render writes the body with data (a JSON value) in every placeholder.
func (t Template) Render(w *bytes.Buffer, data []byte) {
	for i, p := range t.parts {
		if i > 0 {
			w.Write(data)
		}
		w.Write(p)
	}
}

// BatchData writes the data of a batch: the message itself for an outlet
// that is not batched, the JSON list of the messages otherwise.
func BatchData(w *bytes.Buffer, batched bool, messages []json.RawMessage) {
	if !batched && len(messages) == 1 {
		w.Write(messages[0])
		return
	}
	w.WriteByte('[')
	for i, m := range messages {
		if i > 0 {
			w.WriteByte(',')
		}
		w.Write(m)
	}
	w.WriteByte(']')
}
