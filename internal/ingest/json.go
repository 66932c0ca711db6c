package ingest

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"unicode/utf8"
)

// Records reads an upload's records one at a time.
type Records interface {
	// Next writes the next record to dst as one JSON object without line
	// breaks (compacted if it had any). It returns io.EOF after the last
	// record, and an *Error when the body is not a valid upload; read errors of the body come as
	// they are.
	Next(dst *bytes.Buffer) error
}

// NewRecords returns the records of body, an upload of records of shape
// in format and charset.
func NewRecords(body io.Reader, format Format, charset string, shape Shape, limits Limits) (Records, error) {
	limits = limits.WithDefaults()
	r, err := toUTF8(body, charset)
	if err != nil {
		return nil, err
	}
	b := &budget{r: r, max: limits.MaxRecordBytes}
	b.allow(0)
	switch format {
	case JSON:
		dec := json.NewDecoder(b)
		// Tokens outside the records are read with Token, which would read
		// a number as a float64 and fail on 1e700 with an error that is
		// no *Error: as text, any number is only the wrong shape.
		dec.UseNumber()
		return &jsonRecords{dec: dec, budget: b, name: shape.Name}, nil
	case CSV:
		return &csvRecords{in: b, budget: b, nested: shape.Nested}, nil
	}
	return nil, invalid("unknown upload format %q", format)
}

// jsonRecords reads a JSON upload: a bare list of objects, or the list
// wrapped in an object under the records' name ({"customers": [...]}).
// It reads token by token, so only one record is in memory at a time.
type jsonRecords struct {
	dec    *json.Decoder
	budget *budget
	name   string // Shape.Name

	started, wrapped, done bool
	index                  int
	raw                    json.RawMessage // reused: Decode appends into it
}

func (j *jsonRecords) Next(dst *bytes.Buffer) error {
	if j.done {
		return io.EOF
	}
	if !j.started {
		if err := j.start(); err != nil {
			return err
		}
	}
	j.budget.allow(j.dec.InputOffset())
	if !j.dec.More() {
		j.done = true
		return j.finish()
	}
	j.raw = j.raw[:0]
	if err := j.dec.Decode(&j.raw); err != nil {
		return j.syntax(err)
	}
	if j.raw[0] != '{' {
		return invalid("record %d is %s, not a JSON object", j.index, kindOf(j.raw[0]))
	}
	if !utf8.Valid(j.raw) {
		return invalid("record %d is not valid UTF-8; declare the body's charset (utf-8, utf-16 or iso-8859-1)", j.index)
	}
	j.index++
	if bytes.IndexByte(j.raw, '\n') < 0 {
		// Valid JSON has line breaks only between tokens (in strings they
		// are escaped): a record on one line needs no compacting, which
		// saves a pass over it.
		dst.Write(j.raw)
		return nil
	}
	return json.Compact(dst, j.raw)
}

// start reads up to the first record: "[" or `{"<name>": [`.
func (j *jsonRecords) start() error {
	j.started = true
	shape := "a JSON list of " + j.name + ` or {"` + j.name + `": [...]}`
	tok, err := j.dec.Token()
	if errors.Is(err, io.EOF) {
		return invalid("the body is empty; send %s", shape)
	}
	if err != nil {
		return j.syntax(err)
	}
	switch tok {
	case json.Delim('['):
		return nil
	case json.Delim('{'):
	default:
		return invalid("the body must be %s", shape)
	}
	key, err := j.dec.Token()
	if err != nil {
		return j.syntax(err)
	}
	if k, ok := key.(string); !ok || !j.wrapperKey(k) {
		return invalid("the body must be %s; the object has no %q list first", shape, j.name)
	}
	if tok, err = j.dec.Token(); err != nil {
		return j.syntax(err)
	}
	if tok != json.Delim('[') {
		return invalid("%q must be a list of %s", j.name, j.name)
	}
	j.wrapped = true
	return nil
}

// wrapperKey accepts the records' name and its singular, since both
// spellings of the upload path exist (/customers/upload/, /customer/upload/).
func (j *jsonRecords) wrapperKey(k string) bool {
	return k == j.name || k == strings.TrimSuffix(j.name, "s")
}

// finish reads what follows the list: nothing, or the wrapper's "}".
func (j *jsonRecords) finish() error {
	if _, err := j.dec.Token(); err != nil { // the list's "]"
		return j.syntax(err)
	}
	if j.wrapped {
		tok, err := j.dec.Token()
		if err != nil {
			return j.syntax(err)
		}
		if tok != json.Delim('}') {
			return invalid("the body has more after the %q list; send only {%q: [...]}", j.name, j.name)
		}
	}
	if _, err := j.dec.Token(); !errors.Is(err, io.EOF) {
		if err != nil {
			return j.syntax(err)
		}
		return invalid("the body has more after its JSON value")
	}
	return io.EOF
}

// syntax turns a decoding error into the answer for the client; errors of
// the body itself (size limit, connection) pass through. The body ends
// inside its JSON value when the decoder says so with the bare
// io.ErrUnexpectedEOF (or io.EOF): an error of the reader under it comes
// as the reader made it, and one that wraps io.ErrUnexpectedEOF is a
// database connection dropped mid-reply (the credential's check as the
// body ended, api/authority.go), the service's 503, not the client's 400.
func (j *jsonRecords) syntax(err error) error {
	var (
		se *json.SyntaxError
		ie *Error
	)
	switch {
	case errors.As(err, &ie):
		return err
	case errors.As(err, &se):
		return invalid("the body is not valid JSON at byte %d (record %d): %v", se.Offset, j.index, se)
	case err == io.ErrUnexpectedEOF, err == io.EOF: //nolint:errorlint // the decoder's own, bare: see above
		return invalid("the body ends in the middle of its JSON value (record %d)", j.index)
	}
	return err
}

func kindOf(b byte) string {
	switch b {
	case '[':
		return "a list"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}
