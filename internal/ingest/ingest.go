// Package ingest reads upload bodies: streaming decoders of JSON and CSV
// (any charset the API accepts) that yield one record at a time, each
// checked for shape and re-encoded as one JSON object on one line, within
// the memory bounds of Limits. It holds no state and touches no database:
// staging the records and applying them is the import pipeline's
// (commands/imports). It knows no entity and no layer: the caller says
// what it reads (Shape), and maps its refusals (*Error) to its own terms.
package ingest

import (
	"fmt"
	"io"
)

// Format is the encoding of an upload body.
type Format string

// Upload formats.
const (
	JSON Format = "json"
	CSV  Format = "csv"
)

// Limits bound the memory that staging one upload takes. Zero fields take
// the defaults.
type Limits struct {
	// ChunkRecords is the number of records per chunk: one Importer call,
	// one commit, one worker transaction. Default 1,000.
	ChunkRecords int
	// ChunkBytes ends a chunk early when its records reach this size, so
	// that large records make smaller chunks. Default 8 MiB.
	ChunkBytes int
	// MaxRecordBytes is the largest record accepted, as sent (a CSV line or
	// a JSON object); a larger one makes the upload 413. Default 1 MiB.
	MaxRecordBytes int
}

// Default limits.
const (
	DefaultChunkRecords   = 1000
	DefaultChunkBytes     = 8 << 20
	DefaultMaxRecordBytes = 1 << 20
)

// WithDefaults returns l with the defaults in its zero fields.
func (l Limits) WithDefaults() Limits {
	if l.ChunkRecords <= 0 {
		l.ChunkRecords = DefaultChunkRecords
	}
	if l.ChunkBytes <= 0 {
		l.ChunkBytes = DefaultChunkBytes
	}
	if l.MaxRecordBytes <= 0 {
		l.MaxRecordBytes = DefaultMaxRecordBytes
	}
	return l
}

// Shape is what the decoders know of the records of one upload.
type Shape struct {
	// Name is the plural name of the records ("customers"): a JSON upload
	// is a bare list or the list wrapped under Name, or under its
	// singular ({"customers": [...]}, {"customer": [...]}).
	Name string
	// Nested lists the fields whose CSV columns address nested objects
	// with dotted paths, each with the number of segments below it that
	// are object keys whatever they look like (see compileHeader). In any
	// other column a dot is part of the key.
	Nested map[string]int
}

// Error is a body that is not a valid upload, told in words for the
// client. The caller maps it to its own terms (an HTTP API answers 400
// for a malformed body, 413 for a record over the limit).
type Error struct {
	// TooLarge is set when a record is over Limits.MaxRecordBytes; the
	// body is otherwise malformed.
	TooLarge bool
	// Message says what is wrong.
	Message string
}

func (e *Error) Error() string { return e.Message }

// invalid is a whole-request problem: a malformed body.
func invalid(format string, args ...any) error {
	return &Error{Message: fmt.Sprintf(format, args...)}
}

// budget is a reader that fails once more than limit bytes in all were
// read. The record readers move the limit before each record to "where the
// record starts, plus the largest record, plus read-ahead", so that a
// single huge record (a 1 GB JSON string, a CSV file without line breaks)
// fails early instead of being buffered whole by the decoder.
type budget struct {
	r     io.Reader
	read  int64
	limit int64
	max   int // MaxRecordBytes, for the error
}

// slack covers the decoders' read-ahead beyond the current record.
const slack = 64 << 10

func (b *budget) Read(p []byte) (int, error) {
	room := b.limit - b.read
	if room <= 0 {
		return 0, &Error{TooLarge: true, Message: fmt.Sprintf("a record is over the limit of %d bytes", b.max)}
	}
	if int64(len(p)) > room {
		p = p[:room]
	}
	n, err := b.r.Read(p)
	b.read += int64(n)
	return n, err
}

// allow lets the reader read a whole record from offset on.
func (b *budget) allow(offset int64) { b.limit = offset + int64(b.max) + slack }
