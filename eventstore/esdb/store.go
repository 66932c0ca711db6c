// Package esdb is the EventStoreDB event store adapter, on
// EventStore-Client-Go (v4).
//
// EventStoreDB appends atomically to one stream only (the client has no
// multi-stream append), and the port's commit spans streams. So the log is
// one stream, the commit stream (<prefix>-commits): one EventStoreDB event
// per commit, a record (record.go) of the commit's metadata, the streams it
// appends to with their versions, and its events (inline, or for a commit
// above inlineMax in a parts stream of its own, written first and only
// referenced by the record once it is complete). Appending a record with
// the commit stream's expected revision is the commit: every commit of
// every process is serialised there, so a commit is all or nothing and
// the versions it was checked against are exactly those it follows.
//
// Stream versions are derived from the records. The adapter keeps an
// index in memory (stream -> version and the revisions of the records
// that touch it), built by reading the commit stream when the store opens
// and kept current by reading what other writers appended: before a read
// of a stream or of the head, and whenever the expected revision of the
// commit stream or a stream's expected version does not hold (so a stale
// index costs a retry, never a false conflict or a lost commit).
//
// Positions: TxID is the record's revision + 1, Global counts events from
// 1 (the record stores its first). Records are read in revision order and
// a revision is visible only once written, so ReadLog never skips.
// ReadCommit reads one record, by its revision (TxID - 1).
//
// Limits: the index holds every stream (about 140 bytes each) and is
// rebuilt by reading the whole commit stream at start; commits of all
// writers are serialised on one stream, one round trip each; ReadStream
// reads every record of the stream (and the parts holding its events);
// ReadCompanyLog reads every record of its range, of every company (there
// is no index by company); a commit's record (its list of streams) must
// fit EventStoreDB's maximum append size. See docs/architecture.md.
//
// For a service whose write-side state and read models stay in
// PostgreSQL, Coupled (postgres.go) makes PostgreSQL a participant in each
// commit (two-phase commit, decided by the append), and Log (log.go) is
// what the projection runtime reads of the log besides the port.
package esdb

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/EventStore/EventStore-Client-Go/v4/esdb"
	"github.com/google/uuid"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/clientele/clientele/eventstore"
)

const (
	// inlineMax is the largest encoding of a commit's events kept in its
	// record; above it the events go to parts of about partSize, so that
	// reading one stream of a large commit reads one part, not the commit.
	inlineMax = 64 << 10
	partSize  = 64 << 10
	// catchUpBatch is how many records one read of the index catch-up asks.
	catchUpBatch = 4096
	// DefaultMaxAppendSize is EventStoreDB's default MaxAppendSize (1 MiB).
	DefaultMaxAppendSize = 1 << 20
	// appendSlack is kept under the maximum append size for what the
	// server may count besides the data (event ids, types).
	appendSlack = 1 << 10
)

// ErrCommitTooLarge reports a commit whose record, or one of whose
// events, exceeds what one append to EventStoreDB may carry.
var ErrCommitTooLarge = errors.New("esdb: commit too large")

// Options configures a Store. Zero fields take the documented defaults.
type Options struct {
	// Prefix names the adapter's streams: <Prefix>-commits and
	// <Prefix>-parts-<uuid>. Default "clientele".
	Prefix string
	// MaxAppendSize is the server's MaxAppendSize setting: the adapter
	// keeps every append under it. Default DefaultMaxAppendSize.
	MaxAppendSize int
	// Now is the clock stamped on recorded events. Default time.Now.
	Now func() time.Time
	// Logger receives the client's log lines. Default: discarded.
	Logger *slog.Logger
}

// Store is the EventStoreDB event store.
type Store struct {
	client    *esdb.Client
	prefix    string
	commits   string
	maxAppend int
	now       func() time.Time

	// appendMu serialises this process's appends: they would only
	// conflict on the commit stream.
	appendMu sync.Mutex
	// syncMu serialises catch-ups of the index.
	syncMu sync.Mutex
	mu     sync.RWMutex
	idx    index

	// undecided, set when the store is coupled with PostgreSQL
	// (WithPostgres), returns the lowest revision whose commit is
	// written but whose PostgreSQL transaction may not be committed yet
	// (still prepared), if any: ReadLog, ReadCompanyLog and Head stop
	// before it (undecidedBound).
	undecided func(ctx context.Context) (uint64, bool, error)
}

var _ eventstore.Store = (*Store)(nil)

// Open connects to the server of the connection string (esdb://host:port?tls=false,
// esdb+discover://..., see EventStore-Client-Go) and builds the index by
// reading the commit stream.
func Open(ctx context.Context, url string, opts Options) (*Store, error) {
	cfg, err := esdb.ParseConnectionString(url)
	if err != nil {
		return nil, fmt.Errorf("esdb: connection string: %w", err)
	}
	cfg.Logger = esdb.NoopLogging()
	if opts.Logger != nil {
		cfg.Logger = slogLogging(opts.Logger)
	}
	client, err := esdb.NewClient(cfg)
	if err != nil {
		return nil, fmt.Errorf("esdb: %w", err)
	}
	s := New(client, opts)
	if err := s.catchUp(ctx); err != nil {
		_ = client.Close()
		return nil, fmt.Errorf("esdb: open the commit stream %s: %w", s.commits, err)
	}
	return s, nil
}

// New returns a store on client with an empty index: call only on a
// commit stream that has no record yet, or read it first (Open does).
func New(client *esdb.Client, opts Options) *Store {
	if opts.Prefix == "" {
		opts.Prefix = "clientele"
	}
	if opts.MaxAppendSize <= 0 {
		opts.MaxAppendSize = DefaultMaxAppendSize
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Store{
		client: client, prefix: opts.Prefix, commits: opts.Prefix + "-commits",
		maxAppend: opts.MaxAppendSize, now: opts.Now,
		idx: index{nextGlobal: 1, streams: map[string]streamIndex{}},
	}
}

// Ping reads the commit stream at its end, a round trip to the server:
// an error when the server cannot be read (eventstore.ErrUnavailable for
// an outage).
func (s *Store) Ping(ctx context.Context) error {
	s.mu.RLock()
	next := s.idx.next
	s.mu.RUnlock()
	return s.readRecords(ctx, next, 1, func(uint64, []byte) (bool, error) { return false, nil })
}

// Prefix returns the prefix of the store's streams.
func (s *Store) Prefix() string { return s.prefix }

// Close closes the client.
func (s *Store) Close() error { return s.client.Close() }

// Append writes the commit as one record of the commit stream.
func (s *Store) Append(ctx context.Context, c eventstore.Commit) (eventstore.Committed, error) {
	p, err := s.newPending(ctx, c)
	if err != nil {
		return eventstore.Committed{}, err
	}
	s.appendMu.Lock()
	defer s.appendMu.Unlock()
	for {
		if err := s.place(ctx, p); err != nil {
			return eventstore.Committed{}, err
		}
		_, err := s.client.AppendToStream(ctx, s.commits, esdb.AppendToStreamOptions{ExpectedRevision: p.expected()}, p.eventData())
		if isCode(err, esdb.ErrorCodeWrongExpectedVersion) {
			// Another writer committed since the index was read.
			if err := s.catchUp(ctx); err != nil {
				return eventstore.Committed{}, err
			}
			p.fresh = true
			continue
		}
		if err != nil {
			// The record may or may not be written: its parts stay.
			return eventstore.Committed{}, fmt.Errorf("esdb: append to %s: %w", s.commits, outage(err))
		}
		return s.landed(p)
	}
}

// pending is a commit on its way to the commit stream: its record, and,
// once placed, the revision it is to have and its encoding.
type pending struct {
	commit eventstore.Commit
	rec    *record
	evs    []eventRecord
	size   int // of the events, roughly as encoded
	id     uuid.UUID
	// fresh tells whether the index was caught up for this commit: a
	// version conflict is then real.
	fresh bool
	rev   uint64
	data  []byte
}

// newPending checks the commit and builds its record, not placed yet.
func (s *Store) newPending(ctx context.Context, c eventstore.Commit) (*pending, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	p := &pending{
		commit: c,
		evs:    make([]eventRecord, 0, c.Count()),
		rec:    &record{Metadata: c.Metadata, Streams: make([]streamPart, len(c.Streams))},
		id:     uuid.New(),
	}
	for i, st := range c.Streams {
		p.rec.Streams[i] = streamPart{ID: st.StreamID, N: len(st.Events)}
		for _, e := range st.Events {
			// Copied: the caller may reuse its buffer.
			p.evs = append(p.evs, eventRecord{Type: e.Type, Data: slices.Clone(e.Data)})
			p.size += len(e.Type) + len(e.Data) + 20
		}
	}
	if p.size <= inlineMax {
		p.rec.Events = p.evs
	}
	return p, nil
}

// place gives the pending commit the next revision of the commit stream
// as the index knows it, checks its expected versions there (catching up
// once before it reports a conflict), writes its parts if it has them and
// not yet, and encodes its record. Call it with appendMu held. An error
// drops the parts.
func (s *Store) place(ctx context.Context, p *pending) error {
	for {
		err := s.prepare(p)
		var ce *eventstore.ConflictError
		if errors.As(err, &ce) && !p.fresh {
			// The index may be behind another writer: check again on
			// the current log before reporting a conflict.
			if err := s.catchUp(ctx); err != nil {
				return err
			}
			p.fresh = true
			continue
		}
		if err != nil {
			s.dropParts(ctx, p.rec)
			return err
		}
		break
	}
	p.rec.RecordedAt = s.now().UnixMicro()
	data, err := json.Marshal(p.rec)
	if err != nil {
		return err
	}
	if p.rec.Events == nil && p.rec.Parts == nil {
		// Parts are written once (a retry after a lost race references
		// them again), and not for a record that cannot carry their
		// reference.
		if len(data)+partsRef(p.size) > s.maxAppend-appendSlack {
			return s.tooLarge(len(data)+partsRef(p.size), p.rec)
		}
		if p.rec.Parts, err = s.writeParts(ctx, p.evs); err != nil {
			return err
		}
		if data, err = json.Marshal(p.rec); err != nil {
			return err
		}
	}
	if len(data) > s.maxAppend-appendSlack {
		s.dropParts(ctx, p.rec)
		return s.tooLarge(len(data), p.rec)
	}
	p.data = data
	return nil
}

// expected is the commit stream's revision the record must follow.
func (p *pending) expected() esdb.ExpectedRevision {
	if p.rev == 0 {
		return esdb.NoStream{}
	}
	return esdb.Revision(p.rev - 1)
}

func (p *pending) eventData() esdb.EventData {
	return esdb.EventData{EventID: p.id, EventType: recordType, ContentType: esdb.ContentTypeJson, Data: p.data}
}

// committed is the pending commit as it is once its record is written.
func (p *pending) committed() eventstore.Committed {
	events := p.rec.recorded(p.rev, p.evs, 0, all)
	return eventstore.Committed{
		TxID:   p.rev + 1,
		First:  events[0].Position,
		Last:   events[len(events)-1].Position,
		Events: events,
	}
}

// landed adds the record just written to the index and returns the
// commit.
func (s *Store) landed(p *pending) (eventstore.Committed, error) {
	s.mu.Lock()
	err := s.idx.apply(p.rev, p.rec)
	s.mu.Unlock()
	if err != nil {
		return eventstore.Committed{}, err
	}
	return p.committed(), nil
}

// partsRef bounds the bytes a record's reference to the parts of size
// bytes of events takes: the stream's name and the first event of each.
func partsRef(size int) int { return 128 + (size/partSize+2)*8 }

func (s *Store) tooLarge(n int, rec *record) error {
	return fmt.Errorf("%w: its record is %d bytes (%d streams), above the maximum append size of %d", ErrCommitTooLarge, n, len(rec.Streams), s.maxAppend)
}

// prepare checks the commit's expected versions against the index and
// sets the versions, the first global position and the revision of its
// record.
func (s *Store) prepare(p *pending) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	for i, st := range p.commit.Streams {
		v := s.idx.streams[st.StreamID].version
		if err := eventstore.CheckVersion(st.StreamID, st.ExpectedVersion, v); err != nil {
			return err
		}
		p.rec.Streams[i].From = v
	}
	p.rec.FirstGlobal = s.idx.nextGlobal
	p.rev = s.idx.next
	return nil
}

// writeParts writes the events of a large commit to a new parts stream, in
// parts of about partSize, as few appends as the maximum append size
// allows.
func (s *Store) writeParts(ctx context.Context, evs []eventRecord) (*parts, error) {
	p := &parts{Stream: s.prefix + "-parts-" + uuid.NewString()}
	budget := s.maxAppend * 7 / 8 // room for the framing of each event
	var batch []esdb.EventData
	batchSize := 0
	var revision int64 = -1
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		var expected esdb.ExpectedRevision = esdb.NoStream{}
		if revision >= 0 {
			expected = esdb.Revision(uint64(revision))
		}
		if _, err := s.client.AppendToStream(ctx, p.Stream, esdb.AppendToStreamOptions{ExpectedRevision: expected}, batch...); err != nil {
			return fmt.Errorf("esdb: append to %s: %w", p.Stream, outage(err))
		}
		revision += int64(len(batch))
		batch, batchSize = nil, 0
		return nil
	}
	var part []byte
	first := 0
	endPart := func(next int) error {
		part = append(part, ']')
		if len(part) > budget {
			return fmt.Errorf("%w: event %d is %d bytes, above the maximum append size of %d", ErrCommitTooLarge, first, len(part), s.maxAppend)
		}
		if batchSize+len(part) > budget {
			if err := flush(); err != nil {
				return err
			}
		}
		batch = append(batch, esdb.EventData{EventType: "ClienteleCommitPart", ContentType: esdb.ContentTypeJson, Data: part})
		batchSize += len(part)
		p.Firsts = append(p.Firsts, first)
		part, first = nil, next
		return nil
	}
	for i, e := range evs {
		b, err := json.Marshal(e)
		if err != nil {
			return nil, err
		}
		if len(part) > 0 && len(part)+len(b) > partSize {
			if err := endPart(i); err != nil {
				s.dropParts(ctx, &record{Parts: p})
				return nil, err
			}
		}
		if len(part) == 0 {
			part = append(part, '[')
		} else {
			part = append(part, ',')
		}
		part = append(part, b...)
	}
	if err := endPart(len(evs)); err != nil {
		s.dropParts(ctx, &record{Parts: p})
		return nil, err
	}
	if err := flush(); err != nil {
		s.dropParts(ctx, &record{Parts: p})
		return nil, err
	}
	return p, nil
}

// dropParts deletes the parts of a commit that will not be written: they
// are referenced by no record, so this only saves space.
func (s *Store) dropParts(ctx context.Context, rec *record) {
	if rec.Parts == nil || ctx.Err() != nil {
		return
	}
	_, _ = s.client.DeleteStream(ctx, rec.Parts.Stream, esdb.DeleteStreamOptions{ExpectedRevision: esdb.Any{}})
	rec.Parts = nil
}

// ReadStream returns the events of a stream above afterVersion: the
// index names the records that hold them.
func (s *Store) ReadStream(ctx context.Context, streamID string, afterVersion int64) ([]eventstore.RecordedEvent, error) {
	if err := s.catchUp(ctx); err != nil {
		return nil, err
	}
	s.mu.RLock()
	var refs []commitRef
	for _, r := range s.idx.streams[streamID].commits {
		if r.last > afterVersion {
			refs = append(refs, r)
		}
	}
	s.mu.RUnlock()
	var out []eventstore.RecordedEvent
	for _, ref := range refs {
		rec, err := s.readRecord(ctx, ref.rev)
		if err != nil {
			return nil, err
		}
		if rec == nil {
			return nil, fmt.Errorf("esdb: commit %d of stream %q is missing from %s", ref.rev+1, streamID, s.commits)
		}
		off, n := 0, 0
		for _, sp := range rec.Streams {
			if sp.ID == streamID {
				n = sp.N
				break
			}
			off += sp.N
		}
		evs, base, err := s.eventsOf(ctx, rec, off, off+n)
		if err != nil {
			return nil, err
		}
		out = append(out, rec.recorded(ref.rev, evs, base, func(id string, v int64, _ eventstore.Position) bool {
			return id == streamID && v > afterVersion
		})...)
	}
	return out, nil
}

// ReadLog returns whole commits after the position, read from the commit
// stream: at least limit events unless the log ends first.
func (s *Store) ReadLog(ctx context.Context, after eventstore.Position, limit int) ([]eventstore.RecordedEvent, error) {
	if limit <= 0 {
		limit = 1000
	}
	var out []eventstore.RecordedEvent
	from := revision(after)
	for {
		// A commit has an event, so limit+1 records (the first may be
		// read already) give limit events, unless some are void: then
		// read on.
		n := uint64(limit) + 1
		read := uint64(0)
		err := s.readRecords(ctx, from, n, func(rev uint64, data []byte) (bool, error) {
			read++
			from = rev + 1
			var rec record
			if err := decodeRecord(rev, data, &rec); err != nil {
				return false, err
			}
			if !after.Less(eventstore.Position{TxID: rev + 1, Global: rec.span().Last}) {
				return true, nil // read already, or void
			}
			evs, err := s.commitEvents(ctx, rev, &rec, func(_ string, _ int64, pos eventstore.Position) bool { return after.Less(pos) })
			out = append(out, evs...)
			return len(out) < limit, err
		})
		if err != nil || len(out) >= limit || read < n {
			if err != nil {
				return nil, err
			}
			return s.decided(ctx, out)
		}
	}
}

// decided drops the events of the commits read whose PostgreSQL
// transaction may still be undecided, and all after them: a reader of the
// log (a projector) reads PostgreSQL state written with a commit (the
// customers' data keys), which it must find. Called after the records
// were read: a record is written after its transaction is prepared, so
// every undecided one read is seen as prepared.
func (s *Store) decided(ctx context.Context, evs []eventstore.RecordedEvent) ([]eventstore.RecordedEvent, error) {
	if s.undecided == nil || len(evs) == 0 {
		return evs, nil
	}
	rev, ok, err := s.undecided(ctx)
	if err != nil || !ok {
		return evs, err
	}
	i, _ := slices.BinarySearchFunc(evs, rev+1, func(e eventstore.RecordedEvent, tx uint64) int { return cmp.Compare(e.Position.TxID, tx) })
	return evs[:i], nil
}

// ReadCommit returns the events of commit txID: the record of revision
// txID-1, read by its revision (a commit needs no index to be found),
// with its parts if it has them.
func (s *Store) ReadCommit(ctx context.Context, txID uint64) ([]eventstore.RecordedEvent, error) {
	evs, _, err := s.readCommit(ctx, txID)
	return evs, err
}

// ReadCommitTypes returns the events of commit txID of the given types,
// and the span of the whole commit, which its record gives. A record has
// no index of its events' types: every event of the commit is read, all
// the parts of a large one.
func (s *Store) ReadCommitTypes(ctx context.Context, txID uint64, types []string) ([]eventstore.RecordedEvent, eventstore.CommitSpan, error) {
	evs, span, err := s.readCommit(ctx, txID)
	return slices.DeleteFunc(evs, func(e eventstore.RecordedEvent) bool { return !slices.Contains(types, e.Type) }), span, err
}

func (s *Store) readCommit(ctx context.Context, txID uint64) ([]eventstore.RecordedEvent, eventstore.CommitSpan, error) {
	if txID == 0 {
		return nil, eventstore.CommitSpan{}, nil
	}
	rec, err := s.readRecord(ctx, txID-1)
	if err != nil || rec == nil || rec.count() == 0 {
		return nil, eventstore.CommitSpan{}, err // none, or a void record
	}
	evs, err := s.commitEvents(ctx, txID-1, rec, all)
	if err != nil {
		return nil, eventstore.CommitSpan{}, err
	}
	return evs, rec.span(), nil
}

// ReadCompanyLog returns the events of one company's commits between two
// positions (eventstore.CommitReader). The adapter has no index by
// company: it reads and decodes every record from after's on, up to
// upTo's or the page's last, to learn its company, and reads the parts of
// the company's large commits only.
func (s *Store) ReadCompanyLog(ctx context.Context, companyID string, after, upTo eventstore.Position, limit int) ([]eventstore.RecordedEvent, error) {
	if limit <= 0 {
		limit = 1000
	}
	if !after.Less(upTo) || upTo.TxID == 0 {
		return nil, nil
	}
	var out []eventstore.RecordedEvent
	err := s.readCompanyCommits(ctx, companyID, after, upTo, func(evs []eventstore.RecordedEvent) bool {
		out = append(out, evs...)
		return len(out) < limit
	})
	if err != nil {
		return nil, err
	}
	return s.decided(ctx, out)
}

// readCompanyCommits hands each the events between after and upTo of each
// of one company's commits in that range, in log order, until each says
// to stop. It reads the records from after's up to upTo's (revision
// upTo.TxID-1), every company's, decoded to learn the company.
func (s *Store) readCompanyCommits(ctx context.Context, companyID string, after, upTo eventstore.Position, each func([]eventstore.RecordedEvent) bool) error {
	from := revision(after)
	return s.readRecords(ctx, from, upTo.TxID-from, func(rev uint64, data []byte) (bool, error) {
		var rec record
		if err := decodeRecord(rev, data, &rec); err != nil {
			return false, err
		}
		if rec.Metadata.CompanyID != companyID || !after.Less(eventstore.Position{TxID: rev + 1, Global: rec.span().Last}) {
			return true, nil
		}
		evs, err := s.commitEvents(ctx, rev, &rec, func(_ string, _ int64, pos eventstore.Position) bool {
			return after.Less(pos) && !upTo.Less(pos)
		})
		if err != nil {
			return false, err
		}
		return each(evs), nil
	})
}

// EachCompanyEvent hands fn each event of one company's commits between
// two positions (eventstore.CommitReader), as ReadCompanyLog reads them
// (every record of the range, of every company, decoded to learn its
// company) but in one read of the commit stream, one record (and the
// parts of a large commit) in memory at a time. The range ends at the
// head (Head, which stops before a commit still undecided) as it is when
// the read begins: a commit appended during the read is past it.
func (s *Store) EachCompanyEvent(ctx context.Context, companyID string, after, upTo eventstore.Position, fn func(eventstore.RecordedEvent) error) error {
	if !after.Less(upTo) || upTo.TxID == 0 {
		return nil
	}
	head, err := s.Head(ctx)
	if err != nil {
		return err
	}
	if head.Less(upTo) {
		upTo = head
	}
	if !after.Less(upTo) {
		return nil
	}
	var fnErr error
	err = s.readCompanyCommits(ctx, companyID, after, upTo, func(evs []eventstore.RecordedEvent) bool {
		for _, e := range evs {
			if fnErr = fn(e); fnErr != nil {
				return false
			}
		}
		return true
	})
	if fnErr != nil {
		return fnErr
	}
	return err
}

// Head returns the position of the last event of the commit stream, of
// a commit decided (see decided).
func (s *Store) Head(ctx context.Context) (eventstore.Position, error) {
	if err := s.catchUp(ctx); err != nil {
		return eventstore.Position{}, err
	}
	s.mu.RLock()
	head := s.idx.head
	s.mu.RUnlock()
	if s.undecided == nil || head.TxID == 0 {
		return head, nil
	}
	rev, ok, err := s.undecided(ctx)
	if err != nil || !ok || head.TxID <= rev {
		return head, err
	}
	// The last event before revision rev: walk back over void records.
	for r := int64(rev) - 1; r >= 0; r-- {
		rec, err := s.readRecord(ctx, uint64(r))
		if err != nil {
			return eventstore.Position{}, err
		}
		if rec != nil && rec.count() > 0 {
			return eventstore.Position{TxID: uint64(r) + 1, Global: rec.span().Last}, nil
		}
	}
	return eventstore.Position{}, nil
}

// commitEvents returns the recorded events of rec, the record of revision
// rev, that keep accepts, reading its parts if it has them.
func (s *Store) commitEvents(ctx context.Context, rev uint64, rec *record, keep func(streamID string, version int64, pos eventstore.Position) bool) ([]eventstore.RecordedEvent, error) {
	evs, base, err := s.eventsOf(ctx, rec, 0, rec.count())
	if err != nil {
		return nil, err
	}
	return rec.recorded(rev, evs, base, keep), nil
}

// eventsOf returns events of the record that include its events [from,
// to), and the index in the commit of the first returned.
func (s *Store) eventsOf(ctx context.Context, rec *record, from, to int) ([]eventRecord, int, error) {
	if rec.Parts == nil {
		return rec.Events, 0, nil
	}
	if from >= to {
		return nil, 0, nil
	}
	first, last := rec.Parts.partRange(from, to)
	rs, err := s.client.ReadStream(ctx, rec.Parts.Stream, esdb.ReadStreamOptions{From: esdb.Revision(uint64(first)), RequiresLeader: true}, uint64(last-first+1))
	if err != nil {
		return nil, 0, fmt.Errorf("esdb: read %s: %w", rec.Parts.Stream, outage(err))
	}
	defer rs.Close()
	var out []eventRecord
	for range last - first + 1 {
		ev, err := rs.Recv()
		if err != nil {
			if errors.Is(err, io.EOF) || isCode(err, esdb.ErrorCodeResourceNotFound) {
				err = errors.New("missing")
			}
			return nil, 0, fmt.Errorf("esdb: read the parts of a commit from %s: %w", rec.Parts.Stream, outage(err))
		}
		var part []eventRecord
		if err := json.Unmarshal(ev.Event.Data, &part); err != nil {
			return nil, 0, fmt.Errorf("esdb: %s revision %d: %w", rec.Parts.Stream, ev.Event.EventNumber, err)
		}
		out = append(out, part...)
	}
	return out, rec.Parts.Firsts[first], nil
}

// readRecord returns the record of revision rev, nil when there is none
// (yet).
func (s *Store) readRecord(ctx context.Context, rev uint64) (*record, error) {
	var rec *record
	err := s.readRecords(ctx, rev, 1, func(_ uint64, data []byte) (bool, error) {
		rec = new(record)
		return false, decodeRecord(rev, data, rec)
	})
	return rec, err
}

// readRecords calls fn with up to count records of the commit stream from
// revision from, until fn returns false or an error.
func (s *Store) readRecords(ctx context.Context, from, count uint64, fn func(rev uint64, data []byte) (bool, error)) error {
	rs, err := s.client.ReadStream(ctx, s.commits, esdb.ReadStreamOptions{From: esdb.Revision(from), RequiresLeader: true}, count)
	if err != nil {
		return fmt.Errorf("esdb: read %s: %w", s.commits, outage(err))
	}
	defer rs.Close()
	for {
		ev, err := rs.Recv()
		if errors.Is(err, io.EOF) || isCode(err, esdb.ErrorCodeResourceNotFound) {
			return nil // the end, or no commit yet
		}
		if err != nil {
			return fmt.Errorf("esdb: read %s: %w", s.commits, outage(err))
		}
		if ev.Event == nil || ev.Event.EventType != recordType {
			return fmt.Errorf("esdb: %s holds an event that is not a commit record: is the stream the adapter's?", s.commits)
		}
		more, err := fn(ev.Event.EventNumber, ev.Event.Data)
		if err != nil || !more {
			return err
		}
	}
}

func decodeRecord(rev uint64, data []byte, rec *record) error {
	if err := json.Unmarshal(data, rec); err != nil {
		return fmt.Errorf("esdb: commit record %d: %w", rev, err)
	}
	return nil
}

// catchUp reads the records the index has not seen yet.
func (s *Store) catchUp(ctx context.Context) error {
	s.syncMu.Lock()
	defer s.syncMu.Unlock()
	for {
		s.mu.RLock()
		from := s.idx.next
		s.mu.RUnlock()
		n := 0
		err := s.readRecords(ctx, from, catchUpBatch, func(rev uint64, data []byte) (bool, error) {
			// Only the streams: the events are not needed.
			var rec record
			if err := json.Unmarshal(data, &struct {
				FirstGlobal *int64        `json:"first_global"`
				Streams     *[]streamPart `json:"streams"`
				Void        *string       `json:"void"`
			}{&rec.FirstGlobal, &rec.Streams, &rec.Void}); err != nil {
				return false, fmt.Errorf("esdb: commit record %d: %w", rev, err)
			}
			s.mu.Lock()
			err := s.idx.apply(rev, &rec)
			s.mu.Unlock()
			n++
			return true, err
		})
		if err != nil || n < catchUpBatch {
			return err
		}
	}
}

// outage returns err marked as eventstore.ErrUnavailable when it says the
// server cannot be reached or cannot answer now (the same request may
// succeed later), else err.
// The client reports an outage as its own error, or, from a stream of
// reads, as gRPC's status.
func outage(err error) error {
	var e *esdb.Error
	if errors.As(err, &e) {
		switch e.Code() {
		case esdb.ErrorUnavailable, esdb.ErrorCodeDeadlineExceeded, esdb.ErrorCodeConnectionClosed, esdb.ErrorCodeNotLeader, esdb.ErrorAborted:
			return fmt.Errorf("%w (%w)", eventstore.ErrUnavailable, err)
		}
		return err
	}
	if st, ok := status.FromError(err); ok {
		switch st.Code() {
		case codes.Unavailable, codes.DeadlineExceeded, codes.Aborted, codes.ResourceExhausted:
			return fmt.Errorf("%w (%w)", eventstore.ErrUnavailable, err)
		}
	}
	return err
}

func isCode(err error, code esdb.ErrorCode) bool {
	var e *esdb.Error
	return errors.As(err, &e) && e.Code() == code
}

// slogLogging routes the client's log lines to l, a level lower: the client
// logs as errors what the adapter handles (a stale expected revision).
func slogLogging(l *slog.Logger) esdb.LoggingFunc {
	return func(level esdb.LogLevel, format string, args ...any) {
		lv := slog.LevelDebug
		if level == esdb.LogError || level == esdb.LogWarn {
			lv = slog.LevelInfo
		}
		l.Log(context.Background(), lv, "esdb client: "+fmt.Sprintf(format, args...))
	}
}
