package imports

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/clientele/clientele/domain/company"
	"github.com/clientele/clientele/domain/importing"
	"github.com/clientele/clientele/domain/values"
	"github.com/clientele/clientele/eventstore"
	"github.com/clientele/clientele/internal/crypto"
)

// Importer applies staged records of one entity type, one chunk at a
// time. The import worker calls it inside the chunk's transaction, in
// upload order, one chunk at a time per deployment, so identity
// resolution sees every earlier chunk and has no races.
type Importer interface {
	// Entity is the entity type the importer handles.
	Entity() importing.Entity
	// ImportChunk validates every record of the chunk and applies the
	// domain rules, using and updating the write-side state in tx, and
	// appends the resulting events as one commit with TxAppender.AppendTx
	// in the same tx (no commit when nothing changed). A record that breaks
	// a rule becomes a Rejection and never blocks the others; the fields
	// the accepted records carried that are no fields of the entity are
	// the Warnings. An error aborts the whole chunk, which is then retried.
	ImportChunk(ctx context.Context, tx pgx.Tx, chunk Chunk) (importing.Outcome, error)
}

// Chunk is a slice of one upload's records, in upload order.
type Chunk struct {
	Company company.Company
	RunID   string
	// Seq numbers the chunks of a run from 0.
	Seq int
	// FirstIndex is the index in the upload of Records[0].
	FirstIndex int
	// Records are JSON objects. Records from CSV have string values (the
	// importer coerces them) and nested objects/lists built from
	// property-path columns.
	Records []json.RawMessage
	// Metadata is stamped on every event of the chunk: company, run,
	// actor, source ("api", "cli", "sftp"), correlation id.
	Metadata eventstore.Metadata
	// Prepared is what the Importer's Prepare made of Records for Company
	// ahead of the chunk's transaction, or nil: the importer then parses
	// Records itself.
	Prepared Prepared
	// MayDestroy is whether the upload's principal may delete and forget
	// (StageUpload records it on the run): when false, the Importer
	// rejects each record that would (reasonNeedsAdmin) and imports the
	// others.
	MayDestroy bool
	// Reject names records, by position in Records, that the Importer must
	// reject with the reason given, without parsing or applying them:
	// records the store refuses, found by the worker once the chunk kept
	// failing (chunk_isolate.go). The shared parse path
	// (chunkRecords) honours it, so every entity does.
	Reject map[int]string
	// Resolution is what the Importer's Resolve made of this chunk, ahead
	// of its transaction, or nil: ImportChunk then writes it instead of
	// resolving the chunk itself.
	Resolution Resolution
}

// A Preparer is an Importer whose records can be parsed and validated
// from the records and their company alone, before the chunk's
// transaction: the import worker prepares a run's next chunk while the
// current one is in its transaction (ahead.go), so that the parsing of
// one chunk overlaps the database work of the one before.
type Preparer interface {
	Prepare(co company.Company, records []json.RawMessage) Prepared
}

// Prepared is a chunk's records as a Preparer parsed them; only the
// Preparer that made it reads it.
type Prepared any

// A Resolver is an Importer whose work on a chunk splits in two:
// resolving it (reading the write-side state, deciding every record,
// sealing: the reads and the Go work) and writing what it resolved in the
// chunk's transaction (ImportChunk, with Chunk.Resolution set). The worker
// resolves a company's next chunk while the current one writes and
// commits, against the state the current one leaves (ahead.go), so
// that a company's chunks use two cores: one resolves, the other writes.
type Resolver interface {
	Importer
	// Resolve resolves chunk without writing anything: it reads the
	// committed write-side state through q, with the decisions of prev
	// laid over it. prev is the resolution of the company's chunk just
	// before, whose transaction may not have committed yet, or nil.
	Resolve(ctx context.Context, q Reader, chunk Chunk, prev Resolution) (Resolution, error)
}

// Resolution is a chunk as a Resolver resolved it; only the Resolver that
// made it reads it.
type Resolution any

// Reader reads the write-side state: the chunk's transaction, or the pool
// for a chunk resolved ahead of its transaction.
type Reader = crypto.Reader

// TxAppender appends a commit inside a transaction of its InTx, which
// commits it as the event store decides (eventstore.TxStore: the
// PostgreSQL event store, or EventStoreDB's coupled with PostgreSQL).
type TxAppender interface {
	AppendTx(ctx context.Context, tx pgx.Tx, c eventstore.Commit) (eventstore.Committed, error)
	Transactor
}

// Transactor runs fn in a write-side transaction and commits it unless
// fn fails; with the event store's InTx, a commit fn appended commits
// with it, at the store's commit point.
type Transactor interface {
	InTx(ctx context.Context, fn func(tx pgx.Tx) error) error
}

// poolTransactor runs plain transactions on a pool: right for the
// PostgreSQL event store, whose commit point is PostgreSQL's COMMIT.
type poolTransactor struct{ pool *pgxpool.Pool }

func (p poolTransactor) InTx(ctx context.Context, fn func(tx pgx.Tx) error) error {
	return pgx.BeginFunc(ctx, p.pool, fn)
}

// chunkMetadata returns the chunk's metadata with its company, refusing
// metadata of another company (a programming error, never retried into
// success).
func chunkMetadata(chunk Chunk, entity string) (eventstore.Metadata, error) {
	meta := chunk.Metadata
	switch meta.CompanyID {
	case "":
		meta.CompanyID = chunk.Company.ID
	case chunk.Company.ID:
	default:
		return meta, fmt.Errorf("imports: import %s: metadata of company %s in a chunk of %s", entity, meta.CompanyID, chunk.Company.ID)
	}
	return meta, nil
}

// rejecter collects what an Importer makes of each record of a chunk:
// the rejections, and the records accepted with the fields they ignored
// (warnings counts only these, so a record rejected after parsing, or by
// the chunk's Reject, never counts in a warning).
type rejecter struct {
	chunk    Chunk
	entity   string
	list     []importing.Rejection
	accepted int
	ignored  []ignoredAt
}

// accept records that the chunk's record i is imported, ignoring the
// fields ig names.
func (r *rejecter) accept(i int, ig values.Ignored) {
	r.accepted++
	if len(ig) > 0 {
		r.ignored = append(r.ignored, ignoredAt{index: r.chunk.FirstIndex + i, fields: ig})
	}
}

// outcome is what the chunk's records came to.
func (r *rejecter) outcome() importing.Outcome {
	return importing.Outcome{Accepted: r.accepted, Rejections: r.list, Warnings: warnings(r.ignored)}
}

// reject records that the chunk's record i is rejected when err is a
// rejection (a *values.Problem, which every entity's Problem is) and
// returns nil; any other error is a failure of the chunk, returned.
func (r *rejecter) reject(i int, err error) error {
	var p *values.Problem
	if !errors.As(err, &p) {
		return fmt.Errorf("imports: import %s: %w", r.entity, err)
	}
	r.list = append(r.list, importing.Rejection{Index: r.chunk.FirstIndex + i, Reason: p.Reason, Field: p.Field})
	return nil
}

// withRejects returns records and problems with the chunk's Reject
// applied: a rejected record is absent and its problem is the reason
// given. The slices given are not changed (a Prepared is not the
// Importer's to change).
func withRejects[R any](chunk Chunk, records []*R, problems []error) ([]*R, []error) {
	if len(chunk.Reject) == 0 {
		return records, problems
	}
	records, problems = slices.Clone(records), slices.Clone(problems)
	for i, reason := range chunk.Reject {
		if i >= 0 && i < len(records) {
			records[i], problems[i] = nil, &values.Problem{Reason: reason}
		}
	}
	return records, problems
}

// unlessRejected wraps parse so that it skips the records the chunk
// rejects (a record may be rejected because parsing it panics); their
// problem is set by withRejects.
func unlessRejected[R any](chunk Chunk, raws []json.RawMessage, parse func([]byte) (R, error)) ([]json.RawMessage, func([]byte) (R, error)) {
	if len(chunk.Reject) == 0 {
		return raws, parse
	}
	raws = slices.Clone(raws)
	for i := range chunk.Reject {
		if i >= 0 && i < len(raws) {
			raws[i] = nil
		}
	}
	return raws, func(b []byte) (R, error) {
		if b == nil {
			var zero R
			return zero, errSkipped
		}
		return parse(b)
	}
}

// errSkipped is the parse problem of a record the chunk rejects, replaced
// by its reason.
var errSkipped = errors.New("imports: record rejected before parsing")

// rejectAll records the problems of a parsed chunk (parseChunk).
func (r *rejecter) rejectAll(problems []error) error {
	for i, err := range problems {
		if err != nil {
			if err := r.reject(i, err); err != nil {
				return err
			}
		}
	}
	return nil
}

// streamEvents gathers a chunk's events by stream, in the order the
// streams are first touched, each stream appended at the version it had
// before the chunk.
type streamEvents struct {
	streams []eventstore.StreamAppend
	index   map[string]int
}

// add appends e to the stream, which had version expected before the
// chunk.
func (s *streamEvents) add(streamID string, expected int64, e eventstore.Event) {
	i, ok := s.index[streamID]
	if !ok {
		if s.index == nil {
			s.index = map[string]int{}
		}
		i = len(s.streams)
		s.index[streamID] = i
		s.streams = append(s.streams, eventstore.StreamAppend{StreamID: streamID, ExpectedVersion: expected})
	}
	s.streams[i].Events = append(s.streams[i].Events, e)
}

// writeResolved is the ImportChunk of a Resolver: it writes the chunk's
// Resolution with write, or, when the chunk comes without one of resolve's
// kind, what resolve makes of it in tx.
func writeResolved[R any](ctx context.Context, tx pgx.Tx, chunk Chunk, entity string,
	resolve func(context.Context, Reader, Chunk, *R) (*R, error),
	write func(context.Context, pgx.Tx, eventstore.Metadata, *R) (importing.Outcome, error)) (importing.Outcome, error) {
	meta, err := chunkMetadata(chunk, entity)
	if err != nil {
		return importing.Outcome{}, err
	}
	r, ok := chunk.Resolution.(*R)
	if !ok || r == nil {
		if r, err = resolve(ctx, tx, chunk, nil); err != nil {
			return importing.Outcome{}, err
		}
	}
	return write(ctx, tx, meta, r)
}
