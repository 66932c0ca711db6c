// Package ingest streams upload bodies into staged import chunks, the first
// half of the import pipeline shared by every entity.
//
// An upload (JSON or CSV, any charset the API accepts) is read record by
// record, never whole: each record is checked for shape and re-encoded as
// one JSON object on one line, and the records are grouped into chunks of
// about a thousand. Each chunk is one row of import_chunks, written in its
// own short transaction: a transaction held open for a whole upload would
// hold back pg_snapshot_xmin, and with it every reader of the event log on
// the server. When the body has been read to its end and found valid, one
// short transaction makes the run "scheduled" and publishes one message
// per chunk on ChunksTopic through the transactional outbox; a body that
// turns out to be malformed leaves nothing scheduled.
//
// The second half, the worker that applies chunks with an entity's
// Importer, is commands.ImportWorker; it uses Store for the chunk rows.
package ingest

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/clientele/clientele/domain"
)

// Format is the encoding of an upload body.
type Format string

// Upload formats.
const (
	JSON Format = "json"
	CSV  Format = "csv"
)

// ChunksTopic is the Watermill topic of staged chunks: one message per
// chunk, in upload order. Its outbox tables (watermill_import_chunks and
// watermill_offsets_import_chunks) are created by the migrations.
const ChunksTopic = "import_chunks"

// ChunkMessage is the payload of a message on ChunksTopic. It names the
// chunk; the records stay in import_chunks, so a message is small and the
// raw data exists once (and can be deleted once processed).
type ChunkMessage struct {
	RunID     string `json:"run_id"`
	Seq       int    `json:"seq"`
	CompanyID string `json:"company_id"`
}

// ParseChunkMessage decodes and checks a chunk message's payload.
func ParseChunkMessage(payload []byte) (ChunkMessage, error) {
	var m ChunkMessage
	if err := json.Unmarshal(payload, &m); err != nil {
		return ChunkMessage{}, fmt.Errorf("ingest: chunk message: %w", err)
	}
	if m.RunID == "" || m.Seq < 0 {
		return ChunkMessage{}, fmt.Errorf("ingest: chunk message %s names no chunk", payload)
	}
	return m, nil
}

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

func (l Limits) withDefaults() Limits {
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

// invalid is a whole-request problem: the API answers 400 invalid_request.
func invalid(format string, args ...any) error {
	return domain.Errorf(domain.Invalid, format, args...)
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
		return 0, domain.Errorf(domain.TooLarge, "a record is over the limit of %d bytes", b.max)
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
