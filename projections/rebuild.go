package projections

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/clientele/clientele/eventstore"
	"github.com/clientele/clientele/eventstore/postgres"
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
// rebuild runs).
//
// The copies are made with CREATE TABLE ... (LIKE ... INCLUDING ALL) in a
// scratch schema put first on the search_path while Apply runs, so they
// keep columns, defaults, constraints and indexes (index names may differ)
// but not foreign keys, triggers, grants or dependent views: read-model
// tables should have none (a dependent view makes the swap fail, and the
// old tables stay).
//
// kind says how the projector runs, and so how the swap meets the live
// updates. For an inline projector, the swap locks the events table against
// appends and applies every committed event, since appends wrote to the old
// tables up to then. For an async projector, it locks the checkpoint
// against the handler instead, applies what the handler could have seen,
// and leaves the checkpoint there: the handler goes on from it into the new
// tables.
func Rebuild(ctx context.Context, pool *pgxpool.Pool, store *postgres.Store, p Projector, kind Kind, progress func(done, total int64)) error {
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

	rb := &rebuilder{conn: conn.Conn(), pool: pool, store: store, p: p, kind: kind, progress: progress,
		schema: pgx.Identifier{scratchSchema(p.Name())}.Sanitize()}
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
	return Rebuild(ctx, r.cfg.Pool, r.cfg.Store, p, kind, progress)
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
	store    *postgres.Store
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
}

func (rb *rebuilder) run(ctx context.Context) error {
	if err := rb.prepare(ctx); err != nil {
		return err
	}
	head, err := rb.store.Head(ctx)
	if err != nil {
		return err
	}
	if rb.total, err = countEvents(ctx, rb.pool, eventstore.Position{}, head); err != nil {
		return err
	}
	rb.progress(0, rb.total)
	for attempt := 1; ; attempt++ {
		if err := rb.catchUp(ctx); err != nil {
			return err
		}
		saved := rb.cursor
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
		stmts := []string{`DROP SCHEMA IF EXISTS ` + rb.schema + ` CASCADE`, `CREATE SCHEMA ` + rb.schema}
		for _, t := range rb.p.Tables() {
			stmts = append(stmts, fmt.Sprintf(`CREATE TABLE %s.%s (LIKE %s INCLUDING ALL)`,
				rb.schema, pgx.Identifier{t}.Sanitize(), pgx.Identifier{"public", t}.Sanitize()))
		}
		for _, s := range stmts {
			if _, err := tx.Exec(ctx, s); err != nil {
				return fmt.Errorf("%s: %w", s, err)
			}
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
	if err := rb.p.Apply(ctx, tx, events); err != nil {
		return fmt.Errorf("apply %s..%s: %w", events[0].Position, events[len(events)-1].Position, err)
	}
	_, err := tx.Exec(ctx, `SELECT set_config('search_path', $1, true)`, rb.searchPath)
	return err
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
		rest, err := countEvents(ctx, rb.pool, rb.pos, head)
		if err != nil {
			return err
		}
		rb.total = rb.done + rest
	}
	rb.progress(rb.done, rb.total)
	return nil
}
