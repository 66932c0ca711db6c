package document

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"unicode/utf8"

	"github.com/tidwall/gjson"
)

// The customers projector reads two JSON documents per record: the
// event's data and the opened changes. encoding/json decodes them by
// reflection, copying every value; measured on an import, that was most
// of the projector's CPU. gjson walks their members instead, the values
// kept as JSON, as written. It does not validate: the event's data comes
// from a jsonb column (valid JSON), and the changes, opened from the
// sealed event, are checked whole with json.Valid.

// RawOf returns the bytes of r, a value gjson found in data: a slice of
// data, not a copy.
func RawOf(data []byte, r gjson.Result) json.RawMessage {
	if r.Index <= 0 { // position unknown (never so for a member)
		return json.RawMessage(r.Raw)
	}
	return data[r.Index : r.Index+len(r.Raw) : r.Index+len(r.Raw)]
}

// StringOf returns the value of the JSON string r (of valid JSON) as
// encoding/json reads it. gjson reads it alike but where it is not valid
// UTF-8 (encoding/json replaces each bad byte with U+FFFD) or has a lone
// surrogate escape before another \u escape (gjson takes the two for a
// pair): those, and any escaped string, are left to encoding/json.
func StringOf(r gjson.Result) string {
	if !strings.Contains(r.Raw, `\`) && utf8.ValidString(r.Raw) {
		return r.Str
	}
	var s string
	_ = json.Unmarshal([]byte(r.Raw), &s) // a valid JSON string always decodes
	return s
}

// DecodeCustomerEvent decodes the data of a customer event (valid JSON),
// as json.Unmarshal would but without reflecting.
func DecodeCustomerEvent(data []byte, d *CustomerEventData) error {
	*d = CustomerEventData{}
	doc := gjson.ParseBytes(data)
	ok := doc.IsObject()
	doc.ForEach(func(key, value gjson.Result) bool {
		switch key.Raw {
		case `"customer_id"`:
			if ok = value.Type == gjson.String; ok {
				d.CustomerID = StringOf(value)
			}
		case `"sealed"`:
			if ok = value.Type == gjson.String && !strings.Contains(value.Raw, `\`); ok {
				var err error
				d.Sealed, err = base64.StdEncoding.DecodeString(value.Str)
				ok = err == nil
			}
		}
		return ok
	})
	if !ok {
		// null, an escaped string, an error: encoding/json says it best.
		*d = CustomerEventData{}
		return json.Unmarshal(data, d)
	}
	return nil
}

// errNotObject reports opened changes that are valid JSON but not an
// object, or whose set is not an object.
var errNotObject = errors.New("not a JSON object")

// customerDecoder decodes the opened changes of customer events, the
// values of Set left as gjson finds them: a commit's thousand records
// reuse its Set.
type customerDecoder struct {
	ch customerChanges
}

// NewCustomerDecoder returns a decoder of customer events.
func NewCustomerDecoder() *customerDecoder {
	return &customerDecoder{}
}

// changes decodes plain; the result is valid until the next call.
func (d *customerDecoder) Changes(plain []byte) (*customerChanges, error) {
	d.ch = customerChanges{Set: d.ch.Set[:0]}
	if !json.Valid(plain) {
		var x any
		return &d.ch, json.Unmarshal(plain, &x) // says why
	}
	doc := gjson.ParseBytes(plain)
	if !doc.IsObject() {
		return &d.ch, errNotObject
	}
	var err error
	doc.ForEach(func(key, value gjson.Result) bool {
		switch key.Raw {
		case `"set"`:
			switch {
			case value.Type == gjson.Null:
			case !value.IsObject():
				err = errNotObject
			default:
				value.ForEach(func(k, v gjson.Result) bool {
					d.ch.Set = append(d.ch.Set, jsonMember{StringOf(k), v})
					return true
				})
			}
		case `"unset"`:
			err = json.Unmarshal(RawOf(plain, value), &d.ch.Unset)
		case `"add"`:
			err = json.Unmarshal(RawOf(plain, value), &d.ch.Add)
		case `"remove"`:
			err = json.Unmarshal(RawOf(plain, value), &d.ch.Remove)
		}
		return err == nil
	})
	return &d.ch, err
}
