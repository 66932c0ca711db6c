package export

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/clientele/clientele/eventstore"
	"github.com/clientele/clientele/projections"
)

// CompanyLog is what an export reads of the event store: one company's
// commits in log order, up to the head.
type CompanyLog interface {
	ReadCompanyLog(ctx context.Context, companyID string, after, upTo eventstore.Position, limit int) ([]eventstore.RecordedEvent, error)
	Head(ctx context.Context) (eventstore.Position, error)
}

// Config is what an export runs on.
type Config struct {
	// Pool is the database of the read models (the scratch copies are
	// made there).
	Pool *pgxpool.Pool
	// Log is the event store.
	Log CompanyLog
	// Projectors keep the read models of Tables: every Table's Source
	// must be one of theirs. Those that keep none are left out of the
	// replay.
	Projectors []projections.Projector
	// Tables are the read models written; nil is Tables().
	Tables []Table
	// Now is the clock (the default --as-of); nil is time.Now.
	Now func() time.Time
}

// Format is the files' format.
type Format string

// The formats.
const (
	Parquet Format = "parquet"
	NDJSON  Format = "ndjson"
)

// ParseFormat reads a format's name.
func ParseFormat(s string) (Format, error) {
	switch f := Format(s); f {
	case Parquet, NDJSON:
		return f, nil
	}
	return "", fmt.Errorf("unknown format %q (parquet or ndjson)", s)
}

// Request says what to export.
type Request struct {
	CompanyID string
	// AsOf is the instant: the events recorded (committed) at or before
	// it are replayed. Zero is now.
	AsOf   time.Time
	Format Format
	// Dir receives the files (created if need be); a file of the same
	// name is replaced, once the new one is whole.
	Dir string
	// Progress, if not nil, is told how far the export got.
	Progress func(Progress)
}

// Progress is how far an export got: the replay (Table ""), then each
// file in turn.
type Progress struct {
	// Table is the file being written, "" during the replay.
	Table string
	// Done counts the events replayed, or the rows written to Table.
	Done int64
}

// Summary is what an export wrote.
type Summary struct {
	AsOf time.Time
	// Events is how many events were replayed.
	Events int64
	Files  []File
	// Replay and Write are how long the two parts took.
	Replay, Write time.Duration
}

// File is one file written.
type File struct {
	Table string
	Path  string
	Rows  int64
	Bytes int64
}

// Records is the number of rows in all the files.
func (s Summary) Records() int64 {
	var n int64
	for _, f := range s.Files {
		n += f.Rows
	}
	return n
}

// replayPage is how many events the replay reads and applies per
// transaction: the memory of the replay is bounded by it (two pages: one
// applied, the next read ahead).
const replayPage = 5000

// Run exports the company's read models as of req.AsOf to req.Dir.
func Run(ctx context.Context, cfg Config, req Request) (sum Summary, err error) {
	if cfg.Pool == nil || cfg.Log == nil {
		return sum, errors.New("export: nil dependency")
	}
	tables := cfg.Tables
	if tables == nil {
		tables = Tables()
	}
	if _, err := ParseFormat(string(req.Format)); err != nil {
		return sum, fmt.Errorf("export: %w", err)
	}
	if req.Progress == nil {
		req.Progress = func(Progress) {}
	}
	sum.AsOf = req.AsOf
	if sum.AsOf.IsZero() {
		now := time.Now
		if cfg.Now != nil {
			now = cfg.Now
		}
		sum.AsOf = now()
	}
	sum.AsOf = sum.AsOf.UTC()
	ps, err := projectorsOf(cfg.Projectors, tables)
	if err != nil {
		return sum, err
	}
	if err := os.MkdirAll(req.Dir, 0o755); err != nil {
		return sum, fmt.Errorf("export: %w", err)
	}
	scratch, err := projections.NewScratch(ctx, cfg.Pool, ps)
	if err != nil {
		return sum, fmt.Errorf("export: %w", err)
	}
	defer func() {
		if dropErr := scratch.Drop(ctx); dropErr != nil && err == nil {
			err = fmt.Errorf("export: %w", dropErr)
		}
	}()
	start := time.Now()
	if sum.Events, err = replay(ctx, cfg.Log, scratch, req.CompanyID, sum.AsOf, req.Progress); err != nil {
		return sum, fmt.Errorf("export: replay: %w", err)
	}
	sum.Replay = time.Since(start)
	start = time.Now()
	for _, t := range tables {
		f, err := writeTable(ctx, scratch, t, req)
		if err != nil {
			return sum, fmt.Errorf("export: %s: %w", t.Name, err)
		}
		sum.Files = append(sum.Files, f)
	}
	sum.Write = time.Since(start)
	return sum, nil
}

// projectorsOf returns the projectors that keep the tables' sources,
// an error naming a source none keeps.
func projectorsOf(all []projections.Projector, tables []Table) ([]projections.Projector, error) {
	var out []projections.Projector
	for _, t := range tables {
		i := slices.IndexFunc(all, func(p projections.Projector) bool { return slices.Contains(p.Tables(), t.Source) })
		if i < 0 {
			return nil, fmt.Errorf("export: no projector keeps %s (the read model of %s)", t.Source, t.Name)
		}
		if !slices.Contains(out, all[i]) {
			out = append(out, all[i])
		}
	}
	return out, nil
}

// replay applies the company's events recorded at or before asOf, up to
// the head of the log when it begins, to the scratch copies, a page per
// transaction. Every event of a commit has the commit's time, so whole
// commits are kept or left. The next page is read while one is applied.
func replay(ctx context.Context, log CompanyLog, scratch *projections.Scratch, companyID string, asOf time.Time, progress func(Progress)) (int64, error) {
	head, err := log.Head(ctx)
	if err != nil {
		return 0, err
	}
	ctx, cancel := context.WithCancel(ctx)
	pages := make(chan logPage, 1)
	go func() {
		defer close(pages)
		readPages(ctx, log, companyID, head, pages)
	}()
	defer func() {
		cancel()
		for range pages { // let the reader end
		}
	}()
	var done int64
	for p := range pages {
		if p.err != nil {
			return done, p.err
		}
		kept := p.events[:0]
		for _, e := range p.events {
			if !e.RecordedAt.After(asOf) {
				kept = append(kept, e)
			}
		}
		if err := scratch.Apply(ctx, kept); err != nil {
			return done, err
		}
		done += int64(len(kept))
		progress(Progress{Done: done})
	}
	return done, nil
}

// logPage is a page of the company's log, or the error that ended it.
type logPage struct {
	events []eventstore.RecordedEvent
	err    error
}

// readPages sends the company's log up to head, a page at a time, until
// it ends, a read fails (that page is the last) or ctx is done.
func readPages(ctx context.Context, log CompanyLog, companyID string, head eventstore.Position, out chan<- logPage) {
	var pos eventstore.Position
	for pos.Less(head) {
		events, err := log.ReadCompanyLog(ctx, companyID, pos, head, replayPage)
		if err == nil && len(events) == 0 {
			return
		}
		select {
		case out <- logPage{events: events, err: err}:
		case <-ctx.Done():
			return
		}
		if err != nil || len(events) < replayPage {
			return
		}
		pos = events[len(events)-1].Position
	}
}

// writeTable writes one file, under a temporary name renamed once whole.
func writeTable(ctx context.Context, scratch *projections.Scratch, t Table, req Request) (f File, err error) {
	f = File{Table: t.Name, Path: filepath.Join(req.Dir, t.Name+"."+string(req.Format))}
	tmp, err := os.CreateTemp(req.Dir, "."+t.Name+".*.partial")
	if err != nil {
		return f, err
	}
	defer func() {
		if err != nil {
			_ = tmp.Close()
			_ = os.Remove(tmp.Name())
		}
	}()
	var w rowWriter
	if req.Format == Parquet {
		w = newParquetWriter(tmp, t)
	} else {
		w = newNDJSONWriter(tmp, t)
	}
	f.Rows, err = readTable(ctx, scratch, t, req.CompanyID, func(row []value) error { return w.write(row) }, func(n int64) {
		req.Progress(Progress{Table: t.Name, Done: n})
	})
	if err != nil {
		return f, err
	}
	if err := w.close(); err != nil {
		return f, err
	}
	if err := tmp.Close(); err != nil {
		return f, err
	}
	if err := os.Rename(tmp.Name(), f.Path); err != nil {
		return f, err
	}
	st, err := os.Stat(f.Path)
	if err != nil {
		return f, err
	}
	f.Bytes = st.Size()
	req.Progress(Progress{Table: t.Name, Done: f.Rows})
	return f, nil
}

// rowWriter writes rows of one table to a file.
type rowWriter interface {
	write(row []value) error
	close() error
}
