package projections

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/clientele/clientele/eventstore"
)

// scratchLockClass is the first key of the advisory lock a Scratch holds
// on its schema while it lives ("SCRT"): a schema of the prefix whose
// lock nobody holds was left by a process that died, and is dropped.
const scratchLockClass = 0x53435254

// scratchPrefix begins the name of every Scratch schema.
const scratchPrefix = "scratch_"

// Scratch is a replay of part of the log into empty copies of some
// projectors' tables, in a schema of its own, with the projectors' own
// Apply, as a rebuild replays: the live tables are never touched. An
// export as of an instant replays one company's log up to it there and
// reads the tables back (Table); Drop removes them.
//
// The copies are UNLOGGED (a crash loses nothing that matters: they are
// dropped anyway), so the replay writes no WAL, and keep only their
// unique indexes (dropSecondaryIndexes).
type Scratch struct {
	pool       *pgxpool.Pool
	conn       *pgxpool.Conn // holds the schema's advisory lock
	schema     string        // unquoted
	path       string        // the search_path while Apply runs
	projectors []Projector
	// applied counts the events applied; the copies' statistics are
	// renewed when it reaches analyzeAt, which then doubles.
	applied, analyzeAt int
	// analyze is the ANALYZE of the copies' key columns (analyzeKeyColumns).
	analyze string
	// reading is set once Query turned sorts off for the session.
	reading bool
}

// firstAnalyze is how many events a Scratch applies before it first
// renews the statistics of its copies.
const firstAnalyze = 10_000

// NewScratch creates the empty copies of the tables of projectors in a
// new schema, on a connection of pool it keeps until Drop. It first drops
// the schemas of Scratches whose process died before its Drop.
func NewScratch(ctx context.Context, pool *pgxpool.Pool, projectors []Projector) (*Scratch, error) {
	if len(projectors) == 0 {
		return nil, errors.New("projections: scratch: no projectors")
	}
	var id [8]byte
	_, _ = rand.Read(id[:])
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("projections: scratch: %w", err)
	}
	s := &Scratch{analyzeAt: firstAnalyze, pool: pool, conn: conn, schema: scratchPrefix + hex.EncodeToString(id[:]), projectors: projectors}
	if err := s.create(ctx); err != nil {
		_ = s.Drop(ctx)
		return nil, fmt.Errorf("projections: scratch: %w", err)
	}
	return s, nil
}

func (s *Scratch) create(ctx context.Context) error {
	c := s.conn.Conn()
	if _, err := c.Exec(ctx, `SELECT pg_advisory_lock($1, hashtext($2))`, scratchLockClass, s.schema); err != nil {
		return err
	}
	if err := dropAbandonedScratches(ctx, c); err != nil {
		return err
	}
	var searchPath string
	if err := c.QueryRow(ctx, `SELECT current_setting('search_path')`).Scan(&searchPath); err != nil {
		return err
	}
	quoted := pgx.Identifier{s.schema}.Sanitize()
	s.path = quoted + ", " + searchPath
	return pgx.BeginFunc(ctx, c, func(tx pgx.Tx) (err error) {
		if _, err := tx.Exec(ctx, `CREATE SCHEMA `+quoted); err != nil {
			return err
		}
		for _, p := range s.projectors {
			if err := createScratchTables(ctx, tx, quoted, p.Tables(), "UNLOGGED "); err != nil {
				return err
			}
		}
		if err := dropSecondaryIndexes(ctx, tx, s.schema); err != nil {
			return err
		}
		s.analyze, err = analyzeKeyColumns(ctx, tx, s.schema)
		return err
	})
}

// analyzeKeyColumns returns the ANALYZE of the key columns of schema's
// tables (those of their unique indexes, which the projectors' loads and
// upserts look rows up by), each table with its list: the statistics the
// replay's plans need, and not those of the documents, which cost most of
// a whole ANALYZE (jsonb values sampled, sorted and compared) and which
// no statement of the replay filters on. A table without a unique index
// is analyzed whole.
func analyzeKeyColumns(ctx context.Context, tx pgx.Tx, schema string) (string, error) {
	rows, err := tx.Query(ctx, `SELECT quote_ident(n.nspname) || '.' || quote_ident(c.relname),
			coalesce(string_agg(DISTINCT quote_ident(a.attname), ', ') FILTER (WHERE a.attname IS NOT NULL), '')
		FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		LEFT JOIN pg_index i ON i.indrelid = c.oid AND i.indisunique
		LEFT JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum = ANY(i.indkey) AND a.attnum > 0
		WHERE n.nspname = $1 AND c.relkind = 'r'
		GROUP BY 1 ORDER BY 1`, schema)
	if err != nil {
		return "", err
	}
	var tables []string
	var table, columns string
	if _, err := pgx.ForEachRow(rows, []any{&table, &columns}, func() error {
		if columns != "" {
			table += " (" + columns + ")"
		}
		tables = append(tables, table)
		return nil
	}); err != nil {
		return "", err
	}
	return `ANALYZE ` + strings.Join(tables, ", "), nil
}

// dropAbandonedScratches drops the scratch schemas whose advisory lock no
// session holds: their process died (an interrupt is handled by Drop).
func dropAbandonedScratches(ctx context.Context, c *pgx.Conn) error {
	rows, err := c.Query(ctx, `SELECT nspname FROM pg_namespace WHERE starts_with(nspname, $1)`, scratchPrefix)
	if err != nil {
		return err
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return err
	}
	for _, name := range names {
		var free bool
		if err := c.QueryRow(ctx, `SELECT pg_try_advisory_lock($1, hashtext($2))`, scratchLockClass, name).Scan(&free); err != nil {
			return err
		}
		if !free {
			continue // a live Scratch's
		}
		_, err := c.Exec(ctx, `DROP SCHEMA IF EXISTS `+pgx.Identifier{name}.Sanitize()+` CASCADE`)
		_, _ = c.Exec(ctx, `SELECT pg_advisory_unlock($1, hashtext($2))`, scratchLockClass, name)
		if err != nil {
			return err
		}
	}
	return nil
}

// dropSecondaryIndexes drops the indexes of schema's tables but the
// unique ones (primary keys among them), which the projectors' upserts
// (ON CONFLICT) need: a Scratch is read once, in key order, and every
// other index (the GIN ones on documents, those of the identifiers)
// would only slow the replay.
func dropSecondaryIndexes(ctx context.Context, tx pgx.Tx, schema string) error {
	rows, err := tx.Query(ctx, `SELECT quote_ident(n.nspname) || '.' || quote_ident(c.relname) FROM pg_index i
		JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = $1 AND NOT i.indisunique`, schema)
	if err != nil {
		return err
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return err
	}
	for _, name := range names {
		if _, err := tx.Exec(ctx, `DROP INDEX `+name); err != nil {
			return err
		}
	}
	return nil
}

// createScratchTables creates empty copies of tables in schema (quoted),
// as CREATE TABLE ... (LIKE ... INCLUDING ALL); mode is "" or "UNLOGGED ".
func createScratchTables(ctx context.Context, tx pgx.Tx, schema string, tables []string, mode string) error {
	for _, t := range tables {
		s := fmt.Sprintf(`CREATE %sTABLE %s.%s (LIKE %s INCLUDING ALL)`, mode,
			schema, pgx.Identifier{t}.Sanitize(), pgx.Identifier{"public", t}.Sanitize())
		if _, err := tx.Exec(ctx, s); err != nil {
			return fmt.Errorf("%s: %w", s, err)
		}
	}
	return nil
}

// Apply applies events, whole commits in log order, to every projector's
// copies, in one transaction. A commit that a projector cannot apply
// fails the replay (a rebuild would park its company; a replay has no
// later to wait for).
//
// The copies are new tables, which autovacuum analyzes late if ever:
// without statistics the planner joins a page's keys to a copy by
// scanning all of it (the projectors load the rows they change), and the
// replay slows with the square of its size. So each time the events
// applied double, the copies' key columns are analyzed
// (analyzeKeyColumns).
func (s *Scratch) Apply(ctx context.Context, events []eventstore.RecordedEvent) error {
	if len(events) == 0 {
		return nil
	}
	if s.applied += len(events); s.applied >= s.analyzeAt {
		s.analyzeAt *= 2
		if _, err := s.conn.Exec(ctx, s.analyze); err != nil {
			return fmt.Errorf("projections: scratch: analyze: %w", err)
		}
	}
	return pgx.BeginFunc(ctx, s.conn.Conn(), func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT set_config('search_path', $1, true)`, s.path); err != nil {
			return err
		}
		for _, p := range s.projectors {
			if err := p.Apply(ctx, tx, events); err != nil {
				return fmt.Errorf("projections: scratch: %s: apply %s..%s: %w", p.Name(),
					events[0].Position, events[len(events)-1].Position, err)
			}
		}
		return nil
	})
}

// Table returns the qualified, quoted name of the copy of table.
func (s *Scratch) Table(table string) string {
	return pgx.Identifier{s.schema, table}.Sanitize()
}

// Query runs a query on the Scratch's connection (the copies are its
// until Drop), for reading them back.
//
// The copies are read whole, in the order of their keys, which their
// primary keys give; but the planner prices a whole table read through
// its index above a scan and a sort, and a sort of a copy larger than
// work_mem spills to disk (a copy of 20,000 customers: a 13 MB external
// merge, three times the index scan's time; a million customers would
// spill about 650 MB). So Query turns sorts off for the Scratch's
// session (enable_sort, reset by Drop): a query that no index can order
// still sorts.
func (s *Scratch) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	if !s.reading {
		if _, err := s.conn.Exec(ctx, `SET enable_sort = off`); err != nil {
			return nil, fmt.Errorf("projections: scratch: %w", err)
		}
		s.reading = true
	}
	return s.conn.Query(ctx, sql, args...)
}

// Drop drops the copies and releases the connection. It runs even when
// ctx is done: an interrupted export still cleans up, on another
// connection when the interrupt closed the Scratch's.
func (s *Scratch) Drop(ctx context.Context) error {
	if s.conn == nil {
		return nil
	}
	ctx = context.WithoutCancel(ctx)
	drop := `DROP SCHEMA IF EXISTS ` + pgx.Identifier{s.schema}.Sanitize() + ` CASCADE`
	conn := s.conn
	s.conn = nil
	c := conn.Conn()
	if !c.IsClosed() {
		if _, err := c.Exec(ctx, drop); err == nil {
			_, _ = c.Exec(ctx, `RESET enable_sort`)
			_, _ = c.Exec(ctx, `SELECT pg_advisory_unlock($1, hashtext($2))`, scratchLockClass, s.schema)
			conn.Release()
			return nil
		}
	}
	// The session is broken: closing it frees its lock; another drops.
	_ = conn.Hijack().Close(ctx)
	if _, err := s.pool.Exec(ctx, drop); err != nil {
		return fmt.Errorf("projections: scratch: drop %s: %w", s.schema, err)
	}
	return nil
}

// Schema is the name of the Scratch's schema (for messages and tests).
func (s *Scratch) Schema() string { return s.schema }
