package projections

import (
	"bytes"
	"encoding/json"
	"slices"
	"time"
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
