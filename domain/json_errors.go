package domain

import (
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"strings"
)

// JSONDecodeError says what encoding/json refused in the client's terms:
// JSON's types (object, array, string, number, integer, boolean) and the
// fields the client sent, never a Go type or the decoder's own words. It
// is an Invalid (400) error, with the field in Details when there is one.
// Errors that are not about the JSON itself (a body over its limit, a
// connection that dropped) are returned as they are.
//
// io.ErrUnexpectedEOF is taken to be the JSON's end: call it only with
// the error of a decoder whose reader is the request's body itself.
func JSONDecodeError(err error) error {
	var (
		de     *Error
		syntax *json.SyntaxError
		typ    *json.UnmarshalTypeError
	)
	switch {
	case err == nil:
		return nil
	case errors.As(err, &de):
		return err
	case errors.As(err, &syntax):
		return Errorf(Invalid, "the request body is not valid JSON: %s (at byte %d)", syntax.Error(), syntax.Offset)
	case errors.As(err, &typ):
		want := jsonKind(typ.Type)
		got := sentKind(typ.Value)
		if typ.Field == "" {
			return Errorf(Invalid, "the request body must be %s, not %s", want, got)
		}
		e := Errorf(Invalid, "field %q must be %s, not %s", typ.Field, want, got)
		e.Details = []FieldError{{Field: typ.Field, Reason: "must be " + want}}
		return e
	case errors.Is(err, io.ErrUnexpectedEOF):
		return Errorf(Invalid, "the request body ends before its JSON value does")
	}
	if field, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		field = strings.Trim(field, `"`)
		e := Errorf(Invalid, "unknown field %q", field)
		e.Details = []FieldError{{Field: field, Reason: "is not a field of this request"}}
		return e
	}
	if strings.HasPrefix(err.Error(), "json: ") {
		return Errorf(Invalid, "the request body could not be read as the JSON this request takes")
	}
	return err
}

// jsonKind names, in JSON's terms, what a Go type decodes from.
func jsonKind(t reflect.Type) string {
	if t == nil {
		return "a JSON value"
	}
	if t == reflect.TypeFor[json.Number]() {
		return "a number"
	}
	switch t.Kind() {
	case reflect.Pointer:
		return jsonKind(t.Elem())
	case reflect.Struct, reflect.Map:
		return "an object"
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return "a base64 string"
		}
		return "an array"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "an integer"
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a non-negative integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	}
	return "another JSON value"
}

// sentKind names what the client sent from encoding/json's Value:
// "object", "array", "string", "bool", "number" or "number <value>".
func sentKind(v string) string {
	switch {
	case v == "object", v == "array":
		return "an " + v
	case v == "bool":
		return "a boolean"
	case v == "string":
		return "a string"
	case v == "number":
		return "a number"
	case strings.HasPrefix(v, "number "):
		return "the number " + strings.TrimPrefix(v, "number ")
	}
	return v
}
