package projections

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
)

// The customers projector reads two JSON documents per record: the
// event's data and the opened changes. encoding/json decodes them by
// reflection, checking the whole input first and copying every value;
// measured on an import, that was most of the projector's CPU. The
// members are split here instead, the values kept as slices of the
// input: the event's data comes from a jsonb column (valid JSON), and the
// changes are checked whole with json.Valid, which allocates nothing.

// errJSONShape reports input that is not a JSON object as expected.
var errJSONShape = errors.New("malformed JSON object")

// jsonMembers calls fn with each member of the JSON object data, in
// order: its key as written (quotes and escapes included) and its value.
// It checks the structure of the object, not of the values, which it
// skips by their brackets and quotes: valid JSON in, valid values out.
func jsonMembers(data []byte, fn func(key, value []byte) error) error {
	i := skipSpace(data, 0)
	if i == len(data) || data[i] != '{' {
		return errJSONShape
	}
	i = skipSpace(data, i+1)
	if i < len(data) && data[i] == '}' {
		return trailing(data, i+1)
	}
	for {
		if i == len(data) || data[i] != '"' {
			return errJSONShape
		}
		end, ok := stringEnd(data, i)
		if !ok {
			return errJSONShape
		}
		key := data[i:end]
		i = skipSpace(data, end)
		if i == len(data) || data[i] != ':' {
			return errJSONShape
		}
		i = skipSpace(data, i+1)
		if end, ok = valueEnd(data, i); !ok {
			return errJSONShape
		}
		if err := fn(key, data[i:end]); err != nil {
			return err
		}
		i = skipSpace(data, end)
		if i == len(data) {
			return errJSONShape
		}
		switch data[i] {
		case ',':
			i = skipSpace(data, i+1)
		case '}':
			return trailing(data, i+1)
		default:
			return errJSONShape
		}
	}
}

func trailing(data []byte, i int) error {
	if skipSpace(data, i) != len(data) {
		return errJSONShape
	}
	return nil
}

func skipSpace(data []byte, i int) int {
	for i < len(data) && (data[i] == ' ' || data[i] == '\n' || data[i] == '\r' || data[i] == '\t') {
		i++
	}
	return i
}

// stringEnd returns the index after the JSON string starting at data[i]
// (a quote).
func stringEnd(data []byte, i int) (int, bool) {
	for j := i + 1; ; {
		q := bytes.IndexByte(data[j:], '"')
		if q < 0 {
			return 0, false
		}
		q += j
		// Escaped when an odd number of backslashes precede it.
		n := 0
		for k := q - 1; k > i && data[k] == '\\'; k-- {
			n++
		}
		if n%2 == 0 {
			return q + 1, true
		}
		j = q + 1
	}
}

// valueEnd returns the index after the JSON value starting at data[i].
func valueEnd(data []byte, i int) (int, bool) {
	if i == len(data) {
		return 0, false
	}
	switch data[i] {
	case '"':
		return stringEnd(data, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(data); {
			switch data[j] {
			case '"':
				end, ok := stringEnd(data, j)
				if !ok {
					return 0, false
				}
				j = end
				continue
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return j + 1, true
				}
			}
			j++
		}
		return 0, false
	default: // a number, true, false or null
		j := i
	literal:
		for ; j < len(data); j++ {
			switch data[j] {
			case ',', '}', ']', ' ', '\t', '\r', '\n':
				break literal
			}
		}
		return j, j > i
	}
}

// jsonString returns the value of the JSON string s (quotes included),
// interned in names when it needs no unescaping: the keys of a commit's
// changes are the same few names a thousand times.
func jsonString(s []byte, names map[string]string) (string, error) {
	if len(s) < 2 || s[0] != '"' {
		return "", fmt.Errorf("%.20s is not a string", s)
	}
	body := s[1 : len(s)-1]
	if bytes.IndexByte(body, '\\') >= 0 {
		var out string
		err := json.Unmarshal(s, &out)
		return out, err
	}
	if names == nil {
		return string(body), nil
	}
	if name, ok := names[string(body)]; ok {
		return name, nil
	}
	name := string(body)
	names[name] = name
	return name, nil
}

// decodeCustomerEvent decodes the data of a customer event, as
// json.Unmarshal would but without copying or reflecting.
func decodeCustomerEvent(data []byte, d *customerEventData) error {
	*d = customerEventData{}
	err := jsonMembers(data, func(key, value []byte) error {
		var err error
		switch string(key) {
		case `"customer_id"`:
			d.CustomerID, err = jsonString(value, nil)
		case `"sealed"`:
			switch {
			case string(value) == "null":
			case len(value) < 2 || value[0] != '"' || bytes.IndexByte(value, '\\') >= 0:
				err = json.Unmarshal(value, &d.Sealed)
			default:
				body := value[1 : len(value)-1]
				d.Sealed = make([]byte, base64.StdEncoding.DecodedLen(len(body)))
				var n int
				n, err = base64.StdEncoding.Decode(d.Sealed, body)
				d.Sealed = d.Sealed[:n]
			}
		}
		return err
	})
	if err != nil {
		// Whatever it is, encoding/json says it best.
		*d = customerEventData{}
		return json.Unmarshal(data, d)
	}
	return nil
}

// customerDecoder decodes the opened changes of customer events, the
// values of Set as slices of the plaintext: a commit's thousand records
// share its memory for Set and its field names.
type customerDecoder struct {
	names map[string]string // interned (jsonString)
	ch    customerChanges
}

func newCustomerDecoder() *customerDecoder {
	return &customerDecoder{names: map[string]string{}}
}

// changes decodes plain; the result is valid until the next call. Each
// value of Set is checked when applied (customerRow.apply), the rest
// here.
func (d *customerDecoder) changes(plain []byte) (*customerChanges, error) {
	d.ch = customerChanges{Set: d.ch.Set[:0]}
	err := jsonMembers(plain, func(key, value []byte) error {
		switch string(key) {
		case `"set"`:
			if string(value) == "null" {
				return nil
			}
			return jsonMembers(value, func(k, v []byte) error {
				name, err := jsonString(k, d.names)
				d.ch.Set = append(d.ch.Set, jsonMember{name, v})
				return err
			})
		case `"unset"`:
			return json.Unmarshal(value, &d.ch.Unset)
		case `"add"`:
			return json.Unmarshal(value, &d.ch.Add)
		case `"remove"`:
			return json.Unmarshal(value, &d.ch.Remove)
		}
		return nil
	})
	if errors.Is(err, errJSONShape) && !json.Valid(plain) {
		var x any
		err = json.Unmarshal(plain, &x) // says why
	}
	return &d.ch, err
}
