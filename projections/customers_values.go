package projections

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"time"
	"unicode/utf8"
)

// listName maps a key of Changes.Add or Remove to its list: "tags" and
// "tags.add" are both "tags". Other keys are not lists and are ignored.
func listName(k string) string {
	for _, l := range customerLists {
		if k == l || k == l+".add" || k == l+".remove" {
			return l
		}
	}
	return ""
}

// addToList adds values to a list. Both lists are sets, kept sorted as the
// write side records them (customer.Changes), so that equal sets look
// equal whatever order the records gave them in.
func addToList(cur, values []string) []string {
	out := append(append([]string{}, cur...), values...)
	slices.Sort(out)
	return slices.Compact(out)
}

// stringList reads a stored or changed list: a list of strings, or a single
// string (which the interface accepts for lists).
func stringList(v any) []string {
	switch v := v.(type) {
	case string:
		return []string{v}
	case []string:
		return v
	case []any:
		out := make([]string, 0, len(v))
		for _, e := range v {
			if s, ok := e.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

// utcDatetime rewrites a datetime with an offset in UTC with Z; dates and
// anything else stay as they are.
func utcDatetime(v any) any {
	s, ok := v.(string)
	if !ok {
		return v
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return v
	}
	return t.UTC().Format(time.RFC3339Nano)
}

// decodeNumbers unmarshals JSON keeping numbers as json.Number, so that a
// company's custom numeric field survives the round trip exactly.
func decodeNumbers(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	return dec.Decode(v)
}

// canonicalJSON returns the JSON value v as encoding/json writes what it
// decodes to (decodeNumbers), and an error if v is not one valid JSON
// value: the bytes of the customer's field the projector wrote when it
// decoded the changes into Go values and encoded them again. It matters
// for the datasync messages, stored as json, not jsonb, and so kept as
// written. Scalars come out as they went in (a json.Number is written as
// read), and so does a string that needs none of the escapes encoding/json
// writes; only the rest, rare, is decoded and encoded again.
func canonicalJSON(v json.RawMessage) (json.RawMessage, error) {
	switch {
	case len(v) == 0:
		return nil, errors.New("empty JSON value")
	case len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' && plainJSONString([]byte(v[1:len(v)-1])):
		return v, nil // valid: no escape, no quote, no control character
	case v[0] != '"' && v[0] != '{' && v[0] != '[' && json.Valid(v):
		return v, nil // a number, true, false or null
	}
	if !json.Valid(v) { // decodeNumbers stops after the first value
		var x any
		return nil, json.Unmarshal(v, &x) // says why
	}
	var x any
	if err := decodeNumbers(v, &x); err != nil {
		return nil, err
	}
	return json.Marshal(x)
}

// plainJSONString reports whether the body of a JSON string (between its
// quotes) holds nothing encoding/json would write otherwise: no escape,
// no character it escapes (<, >, &, U+2028, U+2029) and only valid UTF-8.
func plainJSONString[T string | []byte](s T) bool {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c < 0x20 || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
				return false
			}
			i++
			continue
		}
		r, size := decodeRune(s[i:])
		if r == utf8.RuneError && size == 1 || r == '\u2028' || r == '\u2029' {
			return false
		}
		i += size
	}
	return true
}

func decodeRune[T string | []byte](s T) (rune, int) {
	if b, ok := any(s).([]byte); ok {
		return utf8.DecodeRune(b)
	}
	return utf8.DecodeRuneInString(string(s))
}

// appendJSONString appends s to b as encoding/json writes a string.
func appendJSONString(b []byte, s string) []byte {
	if plainJSONString(s) {
		b = append(b, '"')
		b = append(b, s...)
		return append(b, '"')
	}
	q, _ := json.Marshal(s) // a string always encodes
	return append(b, q...)
}

// appendStringList appends list to b as encoding/json writes a []string,
// [] when it is nil.
func appendStringList(b []byte, list []string) []byte {
	b = append(b, '[')
	for i, s := range list {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, s)
	}
	return append(b, ']')
}

// rawStringList is stringList of a JSON value, and an error if v is not
// one valid JSON value.
func rawStringList(v json.RawMessage) ([]string, error) {
	if list, ok := plainStringList(v); ok {
		return list, nil
	}
	if !json.Valid(v) {
		var x any
		return nil, json.Unmarshal(v, &x) // says why
	}
	var x any
	if err := decodeNumbers(v, &x); err != nil {
		return nil, err
	}
	return stringList(x), nil
}

// plainStringList reads a JSON array of strings that need no unescaping
// (plainJSONString), as lists mostly are; false for anything else.
func plainStringList(v []byte) ([]string, bool) {
	i := skipSpace(v, 0)
	if i == len(v) || v[i] != '[' {
		return nil, false
	}
	list := make([]string, 0, 2)
	i = skipSpace(v, i+1)
	if i < len(v) && v[i] == ']' {
		return list, skipSpace(v, i+1) == len(v)
	}
	for {
		if i == len(v) || v[i] != '"' {
			return nil, false
		}
		end := bytes.IndexByte(v[i+1:], '"')
		if end < 0 {
			return nil, false
		}
		// Without a backslash in it, the quote found ends the string.
		if body := v[i+1 : i+1+end]; plainJSONString(body) {
			list = append(list, string(body))
		} else {
			return nil, false
		}
		if i = skipSpace(v, i+2+end); i == len(v) {
			return nil, false
		}
		switch v[i] {
		case ',':
			i = skipSpace(v, i+1)
		case ']':
			return list, skipSpace(v, i+1) == len(v)
		default:
			return nil, false
		}
	}
}

// rawUTCDatetime is utcDatetime of a JSON value, returned canonical. A
// datetime in UTC already, as the write side records them, comes back as
// it is, not written again.
func rawUTCDatetime(v json.RawMessage) (json.RawMessage, error) {
	v, err := canonicalJSON(v)
	if err != nil || v[0] != '"' {
		return v, err
	}
	var s string
	if body := v[1 : len(v)-1]; plainJSONString([]byte(body)) {
		s = string(body)
	} else if err := json.Unmarshal(v, &s); err != nil {
		return nil, err
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return v, nil // not a datetime: as it is
	}
	var buf [64]byte
	utc := t.UTC().AppendFormat(buf[:0], time.RFC3339Nano)
	if string(utc) == s {
		return v, nil
	}
	return appendJSONString(nil, string(utc)), nil
}
