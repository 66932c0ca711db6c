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
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	if err := d.Decode(&m); err != nil || m == nil {
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
