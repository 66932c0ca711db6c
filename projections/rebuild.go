package projections

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"maps"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/clientele/clientele/eventstore"
)

// rebuildPageSize is how many events a rebuild reads and applies per
// transaction: large pages amortise the round trips, short transactions
// keep pg_snapshot_xmin moving for everyone else.
const rebuildPageSize = 10_000

// rebuildLockClass is the first key of the advisory lock that lets one
// rebuild per projection run at a time ("RBLD").
const rebuildLockClass = 0x52424c44

// ErrRebuildRunning reports that the projection is being rebuilt already.
var ErrRebuildRunning = errors.New("projections: a rebuild of this projection is already running")

// Rebuild replays the whole log into fresh copies of the projector's tables
// while the old ones keep serving, then swaps them in, in one short
// transaction. progress, if not nil, is called after every page with the
// events applied so far and the events in the log (which grows while the
// rebuild runs). store's log is read through the port and log (nil for
// the log store offers: see RuntimeConfig.Log), which must be the one p reads.
//
// The copies are made with CREATE TABLE ... (LIKE ... INCLUDING ALL) in a
// scratch schema put first on the search_path while Apply runs, so they
// keep columns, defaults, constraints and indexes (index names may differ)
// but not foreign keys, triggers, grants or dependent views: read-model
// tables should have none (a dependent view makes the swap fail, and the
// old tables stay).
//
// kind says how the projector runs, and so how the swap meets the live
// updates. For an inline projector, the swap stops appends
// (eventstore.EventLog.LockAppends) and applies every committed event,
// since appends wrote to the old tables up to then. For an async projector, it locks the
// checkpoint against the handler instead, applies what the handler could
// have seen, and leaves the checkpoint there: the handler goes on from it
// into the new tables.
//
// An async projector's rebuild parks, as the runtime does (stall.go), the
// company of a commit that fails for a reason that will come back: the
// company's later commits are held (their forgettings applied), the other
// companies are rebuilt, and the swap replaces the projector's stalls
// with the rebuild's. A company the live projector had parked is thus
// rebuilt whole when its commit applies now, and parked again when it
// does not. An inline projector's commit that fails aborts the rebuild:
// such a commit could never have been appended.
func Rebuild(ctx context.Context, pool *pgxpool.Pool, store eventstore.Store, log eventstore.EventLog, p Projector, kind Kind, progress func(done, total int64)) error {
	log, err := logOf(store, log)
	if err == nil {
		err = checkLog(p, log)
	}
	if err != nil {
		return fmt.Errorf("projections: rebuild %s: %w", p.Name(), err)
	}
	if kind != KindInline && kind != KindAsync {
		return fmt.Errorf("projections: rebuild %s: unknown kind %q", p.Name(), kind)
	}
	if len(p.Tables()) == 0 {
		return fmt.Errorf("projections: rebuild %s: it owns no tables", p.Name())
	}
	if progress == nil {
		progress = func(int64, int64) {}
	}
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("projections: rebuild %s: %w", p.Name(), err)
	}
	defer conn.Release()
	var locked bool
	if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock($1, hashtext($2))`, rebuildLockClass, p.Name()).Scan(&locked); err != nil {
		return fmt.Errorf("projections: rebuild %s: %w", p.Name(), err)
	}
	if !locked {
		return fmt.Errorf("%w: %s", ErrRebuildRunning, p.Name())
	}
	defer conn.Exec(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock($1, hashtext($2))`, rebuildLockClass, p.Name()) //nolint:errcheck // the lock goes with the session anyway

	rb := &rebuilder{conn: conn.Conn(), pool: pool, store: store, log: log, p: p, kind: kind, progress: progress,
		schema: pgx.Identifier{scratchSchema(p.Name())}.Sanitize()}
	rb.parked = map[string]rebuildStall{}
	if err := rb.run(ctx); err != nil {
		// The old tables were never touched; drop the half-built ones.
		_, _ = pool.Exec(context.WithoutCancel(ctx), `DROP SCHEMA IF EXISTS `+rb.schema+` CASCADE`)
		return fmt.Errorf("projections: rebuild %s: %w", p.Name(), err)
	}
	return nil
}

// Rebuild rebuilds the runtime's projector called name (see Rebuild).
func (r *Runtime) Rebuild(ctx context.Context, name string, progress func(done, total int64)) error {
	p, kind, err := r.projector(name)
	if err != nil {
		return err
	}
	return Rebuild(ctx, r.cfg.Pool, r.cfg.Store, r.cfg.Log, p, kind, progress)
}

// scratchSchema names the schema a projector is rebuilt in. The hash keeps
// two names that differ only in characters replaced here apart.
func scratchSchema(name string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(name) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_' {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	s := b.String()
	if len(s) > 40 {
		s = s[:40]
	}
	h := fnv.New32a()
	h.Write([]byte(name))
	return fmt.Sprintf("rebuild_%s_%08x", s, h.Sum32())
}

// rebuilder is the state of one rebuild.
type rebuilder struct {
	conn     *pgx.Conn // holds the advisory lock; writes the scratch tables
	pool     *pgxpool.Pool
	store    eventstore.Store
	log      eventstore.EventLog
	p        Projector
	kind     Kind
	progress func(done, total int64)
	schema   string // quoted

	searchPath, scratchPath string
	cursor
}

// cursor is how far a rebuild got.
type cursor struct {
	pos         eventstore.Position // the last event applied
	done, total int64
	// parked are the companies the rebuild parked (async projectors
	// only), by company.
	parked map[string]rebuildStall
}

// rebuildStall is a company a rebuild parked: its commits from first up
// to held are not in the new tables (see Stall).
type rebuildStall struct {
	first, held eventstore.Position
	err         string
}

func (rb *rebuilder) run(ctx context.Context) error {
	if err := rb.prepare(ctx); err != nil {
		return err
	}
	head, err := rb.store.Head(ctx)
	if err != nil {
		return err
	}
	if rb.total, err = countEvents(ctx, rb.log, rb.pool, eventstore.Position{}, head, 0); err != nil {
		return err
	}
	rb.progress(0, rb.total)
	for attempt := 1; ; attempt++ {
		if err := rb.catchUp(ctx); err != nil {
			return err
		}
		saved := rb.cursor
		saved.parked = maps.Clone(saved.parked)
		err := rb.finish(ctx)
		if err == nil {
			rb.progress(rb.done, rb.done)
			return nil
		}
		rb.cursor = saved // what the failed transaction applied is gone
		var pgErr *pgconn.PgError
		// A lock timeout (55P03) or a deadlock with a reader of the old
		// tables (40P01; the swap drops them) is worth another try.
		if !errors.As(err, &pgErr) || (pgErr.Code != "55P03" && pgErr.Code != "40P01") || attempt == finishAttempts {
			return err
		}
	}
}

// prepare creates the empty scratch tables.
func (rb *rebuilder) prepare(ctx context.Context) error {
	return pgx.BeginFunc(ctx, rb.conn, func(tx pgx.Tx) error {
		if err := tx.QueryRow(ctx, `SELECT current_setting('search_path')`).Scan(&rb.searchPath); err != nil {
			return err
		}
		rb.scratchPath = rb.schema + ", " + rb.searchPath
		for _, s := range []string{`DROP SCHEMA IF EXISTS ` + rb.schema + ` CASCADE`, `CREATE SCHEMA ` + rb.schema} {
			if _, err := tx.Exec(ctx, s); err != nil {
				return fmt.Errorf("%s: %w", s, err)
			}
		}
		if err := createScratchTables(ctx, tx, rb.schema, rb.p.Tables(), ""); err != nil {
			return err
		}
		if rb.kind == KindAsync {
			return ensureCheckpoint(ctx, tx, rb.p.Name())
		}
		return nil
	})
}

// catchUp applies the log to the scratch tables, a page per transaction,
// until a page comes back short.
func (rb *rebuilder) catchUp(ctx context.Context) error {
	for {
		events, err := rb.store.ReadLog(ctx, rb.pos, rebuildPageSize)
		if err != nil {
			return err
		}
		if len(events) == 0 {
			return nil
		}
		if err := pgx.BeginFunc(ctx, rb.conn, func(tx pgx.Tx) error { return rb.apply(ctx, tx, events) }); err != nil {
			return err
		}
		if err := rb.advance(ctx, events); err != nil {
			return err
		}
		if len(events) < rebuildPageSize {
			return nil
		}
	}
}

// apply applies events to the scratch tables within tx.
func (rb *rebuilder) apply(ctx context.Context, tx pgx.Tx, events []eventstore.RecordedEvent) error {
	if _, err := tx.Exec(ctx, `SELECT set_config('search_path', $1, true)`, rb.scratchPath); err != nil {
		return err
	}
	var err error
	if rb.kind == KindAsync {
		err = rb.applyParking(ctx, tx, events)
	} else {
		err = rb.p.Apply(ctx, tx, events)
	}
	if err != nil {
		return fmt.Errorf("apply %s..%s: %w", events[0].Position, events[len(events)-1].Position, err)
	}
	_, err = tx.Exec(ctx, `SELECT set_config('search_path', $1, true)`, rb.searchPath)
	return err
}

// applyParking applies events, whole commits, as the runtime would:
// those of parked companies are held, only their forgettings applied,
// and a commit that fails for a reason that will come back parks its
// company. The page goes to Apply at once when it can; when that fails,
// commit by commit, each in a savepoint, to find the commits that fail.
func (rb *rebuilder) applyParking(ctx context.Context, tx pgx.Tx, events []eventstore.RecordedEvent) error {
	var live, held []eventstore.RecordedEvent
	if len(rb.parked) == 0 {
		live = events
	} else {
		for _, e := range events {
			if _, ok := rb.parked[e.Metadata.CompanyID]; ok {
				held = append(held, e)
			} else {
				live = append(live, e)
			}
		}
	}
	err := attempt(ctx, tx, func(sp pgx.Tx) error {
		if len(live) > 0 {
			if err := rb.p.Apply(ctx, sp, live); err != nil {
				return err
			}
		}
		return applyForgotten(ctx, sp, rb.p, forgottenIn(rb.p, held))
	})
	if err == nil {
		for _, c := range commits(held) {
			rb.hold(c)
		}
		return nil
	}
	if !Permanent(err) {
		return err
	}
	for _, c := range commits(events) {
		company := c[0].Metadata.CompanyID
		if _, ok := rb.parked[company]; !ok {
			err := attempt(ctx, tx, func(sp pgx.Tx) error { return rb.p.Apply(ctx, sp, c) })
			if err == nil {
				continue
			}
			if !Permanent(err) {
				return err
			}
			rb.parked[company] = rebuildStall{first: c[0].Position,
				err: fmt.Sprintf("projections: %s: apply commit %d: %v", rb.p.Name(), c[0].Position.TxID, err)}
		}
		// A forgetting that fails here too aborts the rebuild: it must
		// not be left out of the new tables.
		if err := applyForgotten(ctx, tx, rb.p, forgottenIn(rb.p, c)); err != nil {
			return err
		}
		rb.hold(c)
	}
	return nil
}

// hold records that commit, of a parked company, was held.
func (rb *rebuilder) hold(commit []eventstore.RecordedEvent) {
	company := commit[0].Metadata.CompanyID
	s := rb.parked[company]
	s.held = commit[len(commit)-1].Position
	rb.parked[company] = s
}

// advance records that events were applied and reports progress. Once the
// rebuild passes the head it started from, the total grows with the log.
func (rb *rebuilder) advance(ctx context.Context, events []eventstore.RecordedEvent) error {
	rb.pos = events[len(events)-1].Position
	rb.done += int64(len(events))
	if rb.done > rb.total {
		head, err := rb.store.Head(ctx)
		if err != nil {
			return err
		}
		rest, err := countEvents(ctx, rb.log, rb.pool, rb.pos, head, 0)
		if err != nil {
			return err
		}
		rb.total = rb.done + rest
	}
	rb.progress(rb.done, rb.total)
	return nil
}
