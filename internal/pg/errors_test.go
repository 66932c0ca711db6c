package pg_test

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/clientele/clientele/internal/pg"
	"github.com/clientele/clientele/internal/pg/pgtest"
)

// saysTransient is an error of a server other than PostgreSQL that says
// itself whether it may pass (as eventstore.ErrUnavailable does).
type saysTransient bool

func (saysTransient) Error() string     { return "away" }
func (s saysTransient) Transient() bool { return bool(s) }

func TestTransient(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"cancelled", fmt.Errorf("x: %w", context.Canceled), true},
		{"no connection in time", fmt.Errorf("x: %w", context.DeadlineExceeded), true},
		{"connection dropped mid-reply", fmt.Errorf("projections: %w", io.ErrUnexpectedEOF), true},
		{"connection refused", &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")}, true},
		{"database/sql bad connection", fmt.Errorf("goose: %w", driver.ErrBadConn), true},
		{"admin shutdown", &pgconn.PgError{Code: "57P01"}, true},
		{"crash of another backend", &pgconn.PgError{Code: "57P02"}, true},
		{"starting up or recovering", &pgconn.PgError{Code: "57P03"}, true},
		{"too many connections", &pgconn.PgError{Code: "53300"}, true},
		{"serialization failure", &pgconn.PgError{Code: "40001"}, true},
		{"deadlock", &pgconn.PgError{Code: "40P01"}, true},
		{"read-only during a failover", &pgconn.PgError{Code: "25006"}, true},
		{"unique violation", &pgconn.PgError{Code: "23505"}, false},
		{"undefined table", &pgconn.PgError{Code: "42P01"}, false},
		{"invalid text", &pgconn.PgError{Code: "22P02"}, false},
		{"a bug", errors.New("boom"), false},
		{"end of a stream", io.EOF, false},
		{"says it is transient itself", fmt.Errorf("x: %w", saysTransient(true)), true},
		{"says it is not transient", saysTransient(false), false},
	} {
		if got := pg.Transient(tc.err); got != tc.want {
			t.Errorf("%s: Transient(%v) = %v, want %v", tc.name, tc.err, got, tc.want)
		}
	}
}

// TestLevel: a retried failure is a warning while the database is away
// (it passes by itself) and an error otherwise (someone must look).
func TestLevel(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want slog.Level
	}{
		{&pgconn.PgError{Code: "57P01"}, slog.LevelWarn}, // admin shutdown
		{fmt.Errorf("apply: %w", &net.OpError{Op: "dial", Err: errors.New("connection refused")}), slog.LevelWarn},
		{&pgconn.PgError{Code: "22003"}, slog.LevelError}, // numeric value out of range
		{errors.New("a bug"), slog.LevelError},
	} {
		if got := pg.Level(tc.err); got != tc.want {
			t.Errorf("Level(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

func TestSchemaMismatch(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"undefined column", fmt.Errorf("projections: apply: %w", &pgconn.PgError{Code: "42703"}), true},
		{"undefined table", &pgconn.PgError{Code: "42P01"}, true},
		{"undefined function", &pgconn.PgError{Code: "42883"}, true},
		{"insufficient privilege", &pgconn.PgError{Code: "42501"}, true},
		{"syntax error", &pgconn.PgError{Code: "42601"}, true},
		{"unique violation", &pgconn.PgError{Code: "23505"}, false},
		{"numeric value out of range", &pgconn.PgError{Code: "22003"}, false},
		{"serialization failure", &pgconn.PgError{Code: "40001"}, false},
		{"connection dropped mid-reply", io.ErrUnexpectedEOF, false},
		{"a bug", errors.New("boom"), false},
	} {
		if got := pg.SchemaMismatch(tc.err); got != tc.want {
			t.Errorf("%s: SchemaMismatch(%v) = %v, want %v", tc.name, tc.err, got, tc.want)
		}
	}
}

// TestTransientWhenTheServerCrashes classifies what pgx really returns
// when the server goes away (pg_ctl stop -m immediate) under open
// connections and while it is down, on a private server.
func TestTransientWhenTheServerCrashes(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a private PostgreSQL server")
	}
	ctx := context.Background()
	srv := pgtest.NewServer(t)
	pool, err := pg.Open(ctx, srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	// Its only address is a socket in its own directory, which no other
	// process can take while it is down (a TCP port can be).
	var listen string
	if err := pool.QueryRow(ctx, `SHOW listen_addresses`).Scan(&listen); err != nil || listen != "" {
		t.Fatalf("the private server listens on %q (%v), want no TCP address", listen, err)
	}
	if host := pool.Config().ConnConfig.Host; !strings.HasPrefix(host, "/") {
		t.Fatalf("the private server's URL has host %q, want its socket directory", host)
	}
	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	srv.Crash()
	_, inQuery := conn.Exec(ctx, "SELECT 1")
	conn.Release()
	_, inTx := tx.Exec(ctx, "SELECT 1")
	atCommit := tx.Commit(ctx)
	whileDown := pool.Ping(ctx)
	for name, err := range map[string]error{"query": inQuery, "statement in a transaction": inTx, "commit": atCommit, "ping while down": whileDown} {
		if err == nil || !pg.Transient(err) {
			t.Errorf("%s: %v (%T) is not transient", name, err, err)
		}
	}
	srv.Start()
	if err := pool.Ping(ctx); err != nil {
		t.Fatalf("the pool does not reconnect by itself: %v", err)
	}
	_, notTransient := pool.Exec(ctx, "SELECT * FROM no_such_table")
	if notTransient == nil || pg.Transient(notTransient) {
		t.Errorf("%v is transient", notTransient)
	}
}

// TestOpenBoundsWaits checks that a caller never waits without end for a
// connection: connecting is bounded, and so is the wait for a connection
// of a pool that has none to give.
func TestOpenBoundsWaits(t *testing.T) {
	ctx := context.Background()
	url := pgtest.URL(t)
	pool, err := pg.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	if got := pool.Config().ConnConfig.ConnectTimeout; got != pg.ConnectTimeout {
		t.Errorf("connect timeout %v, want %v", got, pg.ConnectTimeout)
	}
	if pool.Config().ConnConfig.Tracer == nil {
		t.Error("no bound on acquiring a connection")
	}

	// The bound itself, on a pool of one connection already taken.
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = 1
	cfg.ConnConfig.Tracer = pg.AcquireTimeoutTracer(200 * time.Millisecond)
	one, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer one.Close()
	held, err := one.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Release()
	done := make(chan error, 1)
	go func() {
		_, err := one.Exec(context.Background(), "SELECT 1") // no deadline of its own
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, context.DeadlineExceeded) || !pg.Transient(err) {
			t.Errorf("waiting for a connection failed with %v, want a transient deadline", err)
		}
	case <-time.After(time.Minute): // an upper bound against a hang, not a speed target
		t.Fatal("still waiting for a connection after a minute")
	}
	// The bound is on the wait, not on the work done with the connection.
	held.Release()
	if _, err := one.Exec(ctx, "SELECT pg_sleep(0.5)"); err != nil {
		t.Errorf("a query longer than the acquire bound: %v", err)
	}
}

func TestOutageLogsItsStartAndEnd(t *testing.T) {
	var o pg.Outage
	down := io.ErrUnexpectedEOF
	if o.Succeeded() {
		t.Error("a success with no failure before ends an outage")
	}
	if !o.Failed(down) {
		t.Error("the first transient failure is not logged")
	}
	for range 2 {
		if o.Failed(down) {
			t.Error("a repeated transient failure is logged")
		}
	}
	if !o.Failed(errors.New("boom")) {
		t.Error("an error that is not transient is not logged")
	}
	if !o.Succeeded() || o.Succeeded() {
		t.Error("the end of an outage is not told once")
	}
	if !o.Failed(down) {
		t.Error("the next outage is not logged")
	}
}
