package document

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/clientele/clientele/eventstore"
	"github.com/clientele/clientele/projections"
	"github.com/tidwall/gjson"
)

// ListName maps a key of Changes.Add or Remove to its list: "tags" and
// "tags.add" are both "tags". Other keys are not lists and are ignored.
func ListName(k string) string {
	for _, l := range CustomerLists {
		if k == l || k == l+".add" || k == l+".remove" {
			return l
		}
	}
	return ""
}

// AddToList adds values to a list. Both lists are sets, kept sorted as the
// write side records them (customer.Changes), so that equal sets look
// equal whatever order the records gave them in.
func AddToList(cur, values []string) []string {
	out := append(append([]string{}, cur...), values...)
	slices.Sort(out)
	return slices.Compact(out)
}

// StringList reads a stored or changed list: a list of strings, or a single
// string (which the interface accepts for lists).
func StringList(v any) []string {
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

// UtcDatetime rewrites a datetime with an offset in UTC with Z; dates and
// anything else stay as they are.
func UtcDatetime(v any) any {
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

// DecodeNumbers unmarshals JSON keeping numbers as json.Number, so that a
// company's custom numeric field survives the round trip exactly. Its
// error is a *malformedJSON.
func DecodeNumbers(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return &projections.MalformedJSON{Err: err}
	}
	return nil
}

// canonicalJSON returns the JSON value v (valid JSON) as encoding/json
// writes what it decodes to (decodeNumbers): the bytes of the customer's
// field the projector wrote when it decoded the changes into Go values
// and encoded them again. It matters for the datasync messages, stored as
// json, not jsonb, and so kept as written. Scalars come out as they went
// in (a json.Number is written as read).
func canonicalJSON(v gjson.Result) (json.RawMessage, error) {
	switch v.Type {
	case gjson.String:
		return jsonString(StringOf(v)), nil
	case gjson.JSON:
		var x any
		if err := DecodeNumbers([]byte(v.Raw), &x); err != nil {
			return nil, err
		}
		return json.Marshal(x)
	}
	return json.RawMessage(v.Raw), nil // a number, true, false or null
}

// jsonString returns s as encoding/json writes a string (escaping <, >
// and & among others).
func jsonString(s string) json.RawMessage {
	b, _ := json.Marshal(s) // a string always encodes
	return b
}

// jsonList returns list as encoding/json writes a []string, [] when it is
// nil.
func jsonList(list []string) json.RawMessage {
	if list == nil {
		list = []string{}
	}
	b, _ := json.Marshal(list) // strings always encode
	return b
}

// rawStringList is stringList of a JSON value (valid JSON).
func rawStringList(v gjson.Result) []string {
	switch {
	case v.Type == gjson.String:
		return []string{StringOf(v)}
	case v.IsArray():
		list := make([]string, 0, 2)
		v.ForEach(func(_, e gjson.Result) bool {
			if e.Type == gjson.String {
				list = append(list, StringOf(e))
			}
			return true
		})
		return list
	}
	return nil
}

// rawUTCDatetime is utcDatetime of a JSON value (valid JSON), returned
// canonical.
func rawUTCDatetime(v gjson.Result) (json.RawMessage, error) {
	if v.Type != gjson.String {
		return canonicalJSON(v)
	}
	s := StringOf(v)
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		s = t.UTC().Format(time.RFC3339Nano)
	}
	return jsonString(s), nil
}

// DecodeNumbersEvent decodes an event's data keeping numbers exact (a
// company field's digits, money in minor units).
func DecodeNumbersEvent(e eventstore.RecordedEvent, v any) error {
	if err := DecodeNumbers(e.Data, v); err != nil {
		return fmt.Errorf("projections: decode %s %s/%d: %w", e.Type, e.StreamID, e.StreamVersion, err)
	}
	return nil
}
