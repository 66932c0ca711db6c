// Package pg is the PostgreSQL plumbing shared by every adapter: the
// connection pool, the embedded migrations, the embedded server that
// runs a private PostgreSQL from the machine's own binaries, and what a
// failure of the database is (errors.go: Transient, SchemaMismatch,
// UnstorableText). It knows no layer of the application: what a failure
// means to a caller is said where the domain is known (storeerr).
package pg

import (
	"context"
	"embed"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"
)

//go:embed migrations/*.sql
var migrations embed.FS

// Open connects a pool to url and checks that the server answers.
func Open(ctx context.Context, url string) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("pg: parse database url: %w", err)
	}
	// Every consumer (each async projector, the import worker, each outlet
	// worker) holds up to three connections while it handles a message
	// (the subscriber's transaction, its own, a read), and the API needs
	// its share: pgx's default of max(4, CPUs) would starve them. A
	// pool_max_conns in the URL still wins when larger.
	if cfg.MaxConns < 40 {
		cfg.MaxConns = 40
	}
	if cfg.ConnConfig.ConnectTimeout == 0 {
		cfg.ConnConfig.ConnectTimeout = ConnectTimeout
	}
	if cfg.ConnConfig.Tracer == nil {
		cfg.ConnConfig.Tracer = acquireTimeout{AcquireTimeout}
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("pg: connect: %w", err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("pg: connect: %w", err)
	}
	return pool, nil
}

// ConnectTimeout bounds one attempt to connect when the URL sets no
// connect_timeout. Without it a server that does not answer (its host
// down, a partition) holds the caller for the operating system's TCP
// timeout, minutes, while a stopped server refuses at once.
const ConnectTimeout = 5 * time.Second

// AcquireTimeout bounds the wait for a connection of the pool: a request
// for a connection while the database is away fails after it at most (a
// transient error: the API answers 503 with Retry-After) instead of
// queueing behind the attempts to connect. The pool checks a connection
// that stood idle before handing it out, and that check is bounded too.
const AcquireTimeout = 10 * time.Second

// acquireTimeout is the pool's acquire tracer that puts AcquireTimeout on
// the context of Acquire: pgxpool has no setting of its own for it, and
// uses the context a tracer returns for the rest of the call (the wait,
// the check of an idle connection), not for the work done with the
// connection afterwards.
type acquireTimeout struct{ d time.Duration }

type acquireCancelKey struct{}

var (
	_ pgx.QueryTracer       = acquireTimeout{}
	_ pgxpool.AcquireTracer = acquireTimeout{}
)

func (a acquireTimeout) TraceAcquireStart(ctx context.Context, _ *pgxpool.Pool, _ pgxpool.TraceAcquireStartData) context.Context {
	ctx, cancel := context.WithTimeout(ctx, a.d)
	return context.WithValue(ctx, acquireCancelKey{}, cancel)
}

func (acquireTimeout) TraceAcquireEnd(ctx context.Context, _ *pgxpool.Pool, _ pgxpool.TraceAcquireEndData) {
	if cancel, ok := ctx.Value(acquireCancelKey{}).(context.CancelFunc); ok {
		cancel()
	}
}

func (acquireTimeout) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	return ctx
}

func (acquireTimeout) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// Migrate applies every embedded migration not yet applied. Concurrent
// callers are serialised by an advisory lock.
func Migrate(ctx context.Context, pool *pgxpool.Pool) error {
	db := stdlib.OpenDBFromPool(pool)
	defer db.Close()
	locker, err := lock.NewPostgresSessionLocker()
	if err != nil {
		return fmt.Errorf("pg: migrate: %w", err)
	}
	sub, err := fsSub()
	if err != nil {
		return err
	}
	p, err := goose.NewProvider(goose.DialectPostgres, db, sub, goose.WithSessionLocker(locker))
	if err != nil {
		return fmt.Errorf("pg: migrate: %w", err)
	}
	if _, err := p.Up(ctx); err != nil {
		return fmt.Errorf("pg: migrate: %w", err)
	}
	return nil
}

// MigrationsFingerprint identifies the set of embedded migrations; test
// harnesses key their template databases on it.
func MigrationsFingerprint() (string, error) {
	entries, err := migrations.ReadDir("migrations")
	if err != nil {
		return "", err
	}
	h := fnv64()
	for _, e := range entries {
		b, err := migrations.ReadFile("migrations/" + e.Name())
		if err != nil {
			return "", err
		}
		h.Write([]byte(e.Name()))
		h.Write(b)
	}
	return fmt.Sprintf("%016x", h.Sum64()), nil
}

// QuoteLiteral returns s as an SQL string literal, for the statements
// that take no parameter (PREPARE TRANSACTION, COMMIT/ROLLBACK PREPARED).
func QuoteLiteral(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
