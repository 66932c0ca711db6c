package values

import (
	"bytes"
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"unicode/utf8"
)

// Reasons for a value no store can hold. A value that gets past the
// record's parser is written to jsonb (the event log, every read model,
// the datasync queues): one PostgreSQL refuses would fail every later
// write of its commit (a poison commit that stops a projector, or a chunk
// that fails every retry) instead of being this record's rejection.
const (
	// ReasonNUL: PostgreSQL stores no U+0000 in text or jsonb.
	ReasonNUL = "must not contain the character U+0000"
	// ReasonSurrogate: encoding/json turns a lone \ud800 into U+FFFD
	// without a word (the record would be stored changed), and jsonb
	// refuses it; so it is read from the JSON text.
	ReasonSurrogate = `must not contain an unpaired UTF-16 surrogate (\ud800-\udfff)`
	// ReasonUTF8: text that is not UTF-8 would be stored changed (U+FFFD)
	// or refused.
	ReasonUTF8 = "must be valid UTF-8"
	// ReasonNumbersTooLong: a number is small as sent and as stored but
	// is printed with every digit (1e131071 is 131,072 characters), and
	// every reader of the log and of a read model gets it printed; a
	// record of such numbers could be stored and never read again (past
	// PostgreSQL's 1 GB for a value's text). So a record's numbers may
	// grow by at most MaxNumberGrowth when written out.
	ReasonNumbersTooLong = "the numbers of a record written out in full (as PostgreSQL prints them) must be at most 1 MiB longer than as sent"
)

const (
	reasonNotJSON   = "must be JSON"
	reasonNotObject = "record must be a JSON object"
)

// MaxNumberGrowth bounds how much longer a record's (or message's)
// numbers may be when written out in full than as sent: eight numbers of
// 131,072 digits, the most one may have.
const MaxNumberGrowth = 1 << 20

// DecodeRecord decodes one imported record, a JSON object, keeping every
// digit of numbers (json.Number). It refuses a record that is not an
// object and one holding a value no store can hold (Storable), naming
// the top-level field that holds it: "" for a key, and for a key that
// does not look like a field name (SafeName), since a key may itself be
// personal data and rejections are stored.
func DecodeRecord(raw []byte) (m map[string]any, field, reason string) {
	v, field, reason := decodeStorable(raw)
	switch reason {
	case "":
	case reasonNotJSON:
		return nil, "", reasonNotObject
	default:
		return nil, field, reason
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, "", reasonNotObject
	}
	return m, "", ""
}

// Storable checks JSON text that is stored as it is (a datatarget
// message, a value of a data query) as DecodeRecord checks a record: it
// must be valid JSON and UTF-8, hold no U+0000, no unpaired surrogate
// escape and only numbers PostgreSQL can store (Numeric), which grow by
// at most MaxNumberGrowth when written out. field names the top-level
// member at fault when raw is an object and its key looks like a field
// name (SafeName); else it is "".
func Storable(raw []byte) (field, reason string) {
	if _, field, reason = decodeStorable(raw); reason != "" {
		return field, reason
	}
	return "", hiddenMembers(raw)
}

// hiddenMembers checks every key, string and number of the first JSON
// value of raw, token by token. A repeated key is one member once decoded
// (the last), but text stored as it is reaches jsonb, which parses every
// member: a value hidden under a repeated key ({"n": 1e-16384, "n": 1})
// would pass the decoded check and fail the store. Records need no such
// walk: they are stored as decoded, never as sent.
func hiddenMembers(raw []byte) string {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	w, depth := walker{}, 0
	for {
		t, err := d.Token()
		if err != nil {
			return "" // decodeStorable has judged the syntax
		}
		switch t {
		case json.Delim('{'), json.Delim('['):
			depth++
		case json.Delim('}'), json.Delim(']'):
			depth--
		}
		if reason := w.value(t); reason != "" {
			return reason
		}
		if depth == 0 {
			return "" // the end of the first value
		}
	}
}

// decodeStorable decodes the first JSON value of raw; what follows it is
// ignored, as a json.Decoder does. It decodes into an interface, not a
// map: encoding/json then builds the map without reflection, which is
// most of the cost of a record.
func decodeStorable(raw []byte) (v any, field, reason string) {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	if err := d.Decode(&v); err != nil {
		return nil, "", reasonNotJSON
	}
	raw = raw[:d.InputOffset()]
	// Both conditions are rare: the member that holds the fault is found
	// by a second decode only then.
	if !utf8.Valid(raw) {
		return nil, memberWhere(raw, func(b []byte) bool { return !utf8.Valid(b) }), ReasonUTF8
	}
	if unpairedSurrogate(raw) {
		return nil, memberWhere(raw, unpairedSurrogate), ReasonSurrogate
	}
	m, ok := v.(map[string]any)
	if !ok {
		w := walker{}
		if reason := w.value(v); reason != "" {
			return nil, "", reason
		}
		return v, "", ""
	}
	if w := (walker{}); w.value(m) == "" {
		return v, "", ""
	}
	// Again in key order (rare, and the cost of sorting is spared to good
	// records), so that the field named is the same on every run.
	w := walker{}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if strings.IndexByte(k, 0) >= 0 {
			return nil, "", ReasonNUL
		}
		if reason := w.value(m[k]); reason != "" {
			return nil, SafeName(k), reason
		}
	}
	return v, "", "" // not reached: the walk above found a fault
}

// walker checks decoded values, counting how much their numbers grow.
type walker struct{ growth int }

func (w *walker) value(v any) string {
	switch v := v.(type) {
	case string:
		if strings.IndexByte(v, 0) >= 0 {
			return ReasonNUL
		}
	case json.Number:
		printed, reason := Numeric(string(v))
		if reason != "" {
			return reason
		}
		// Only growth counts (a number printed shorter saves nothing):
		// the sum then crosses the bound in any order of the walk.
		if w.growth += max(printed-len(v), 0); w.growth > MaxNumberGrowth {
			return ReasonNumbersTooLong
		}
	case []any:
		for _, e := range v {
			if reason := w.value(e); reason != "" {
				return reason
			}
		}
	case map[string]any:
		for k, e := range v {
			if strings.IndexByte(k, 0) >= 0 {
				return ReasonNUL
			}
			if reason := w.value(e); reason != "" {
				return reason
			}
		}
	}
	return ""
}

// memberWhere returns the key (if SafeName) of the first member, in key
// order, of the JSON object raw whose value's text satisfies bad; "" when
// raw is no object or no member's value does (the fault is in a key).
func memberWhere(raw []byte, bad func([]byte) bool) string {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return ""
	}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if bad(m[k]) {
			return SafeName(k)
		}
	}
	return ""
}

// unpairedSurrogate reports whether valid JSON text holds a \u escape of
// a UTF-16 surrogate (U+D800 to U+DFFF) that is not a high surrogate
// followed at once by an escaped low one. In valid JSON a backslash
// occurs only in strings, and each escape is read whole, so \\ud800 (a
// backslash, then the letters) is no escape.
func unpairedSurrogate(b []byte) bool {
	for {
		i := bytes.IndexByte(b, '\\')
		if i < 0 || i+1 >= len(b) {
			return false
		}
		if b[i+1] != 'u' {
			b = b[i+2:]
			continue
		}
		r, ok := hex4(b[i+2:])
		if !ok {
			return false // not valid JSON: the decoder said so already
		}
		b = b[i+6:]
		switch {
		case r >= 0xDC00 && r <= 0xDFFF:
			return true
		case r >= 0xD800 && r <= 0xDBFF:
			if len(b) < 6 || b[0] != '\\' || b[1] != 'u' {
				return true
			}
			if lo, ok := hex4(b[2:]); !ok || lo < 0xDC00 || lo > 0xDFFF {
				return true
			}
			b = b[6:]
		}
	}
}

// hex4 reads the four hex digits of a \u escape.
func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range b[:4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		case c >= 'A' && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}
