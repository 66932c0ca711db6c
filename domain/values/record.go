package values

import (
	"bytes"
	"encoding/json"
	"strings"
)

// ReasonNUL is the rejection of a record holding the character U+0000,
// which PostgreSQL cannot store in text or jsonb: accepted, it would fail
// every later write of the record (a poison commit) instead of this one.
const ReasonNUL = "must not contain the character U+0000"

// DecodeRecord decodes one imported record, a JSON object, keeping every
// digit of numbers (json.Number). It refuses a record that is not an
// object, and one with U+0000 in any key or string, naming the top-level
// field that holds it.
func DecodeRecord(raw []byte) (m map[string]any, field, reason string) {
	m, ok := decodeObject(raw)
	if !ok {
		return nil, "", "record must be a JSON object"
	}
	for k, v := range m {
		if strings.ContainsRune(k, 0) {
			return nil, "", ReasonNUL
		}
		if hasNUL(v) {
			return nil, k, ReasonNUL
		}
	}
	return m, "", ""
}

// decodeObject decodes the first JSON value of raw, which must be an
// object; what follows it is ignored, as a json.Decoder does. It decodes
// into an interface, not a map: encoding/json then builds the map without
// reflection, which is most of the cost of a record.
func decodeObject(raw []byte) (map[string]any, bool) {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, false
	}
	m, ok := v.(map[string]any)
	return m, ok
}

func hasNUL(v any) bool {
	switch v := v.(type) {
	case string:
		return strings.ContainsRune(v, 0)
	case []any:
		for _, e := range v {
			if hasNUL(e) {
				return true
			}
		}
	case map[string]any:
		for k, e := range v {
			if strings.ContainsRune(k, 0) || hasNUL(e) {
				return true
			}
		}
	}
	return false
}
