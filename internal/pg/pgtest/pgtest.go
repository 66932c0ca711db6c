// Package pgtest hands out fresh, migrated PostgreSQL databases to tests.
//
// One embedded server serves every test process of a `go test` run (the
// processes attach to the same data directory; the last one out stops it).
// A template database is migrated once per set of migrations, and each test
// gets its own copy, dropped when the test ends. With
// CLIENTELE_TEST_DATABASE_URL set, that server is used instead.
//
// A package that uses pgtest calls pgtest.Main from its TestMain. A test
// that crashes or stops its database runs a server of its own
// (NewServer): the shared one serves every other test.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/clientele/clientele/internal/pg"
)

var (
	mu       sync.Mutex
	server   *pg.Embedded
	adminURL string // a URL to the "postgres" database of the test server
	// admin is a pool on adminURL that creates and drops the tests'
	// databases. Its connections are kept: a server process costs
	// PostgreSQL about 40 ms of CPU to start and end on this kind of
	// machine (a virtual one, where forks and page faults are dear), and
	// a connection for each creation and each drop cost every test two.
	admin    *pgxpool.Pool
	template string
	initErr  error
	initDone bool
)

// Main runs the tests of a package and then detaches from the shared
// server. Use it as `func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }`.
func Main(m *testing.M) int {
	code := m.Run()
	mu.Lock()
	defer mu.Unlock()
	if admin != nil {
		admin.Close()
		admin = nil
	}
	if server != nil {
		if err := server.Close(); err != nil {
			fmt.Fprintln(os.Stderr, "pgtest: stop server:", err)
		}
		server = nil
	}
	return code
}

// Dir is the data directory of the shared test server.
func Dir() string {
	return filepath.Join(clustersDir(), fmt.Sprintf("clientele-pgtest-%d", os.Getuid()))
}

// clustersDir is where the test servers keep their clusters: in memory
// (a tmpfs, memoryDir) when there is one with room, else the temporary
// directory. Every test creates a database and drops it: PostgreSQL
// copies and later deletes each of the template's thousand-odd files,
// which on ext4 took 330 ms a database against 90 ms on a tmpfs, and
// much longer under load (the journal, the inode bitmaps). No test
// cluster needs to outlive the machine.
func clustersDir() string {
	if dir := memoryDir(); dir != "" {
		return dir
	}
	return os.TempDir()
}

// minMemoryBytes is the room a tmpfs must have to hold the test
// clusters: the shared one holds a database per running test (about
// 20 MB each), a private one a few hundred MB.
const minMemoryBytes = 4 << 30

func setup() error {
	mu.Lock()
	defer mu.Unlock()
	if initDone {
		return initErr
	}
	initDone = true
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if url := os.Getenv("CLIENTELE_TEST_DATABASE_URL"); url != "" {
		adminURL = url
	} else {
		s, err := pg.StartEmbedded(ctx, pg.EmbeddedOptions{Dir: Dir(), Fast: true, Database: "postgres"})
		if err != nil {
			initErr = err
			return err
		}
		server = s
		adminURL = s.URL()
		if initErr = cheapenPassword(ctx, adminURL); initErr != nil {
			return initErr
		}
	}
	if initErr = ensureTemplate(ctx); initErr != nil {
		return initErr
	}
	if initErr = rollBackAbandoned(ctx); initErr != nil {
		return initErr
	}
	cfg, err := pgxpool.ParseConfig(adminURL)
	if err != nil {
		initErr = err
		return err
	}
	cfg.MaxConns = 4
	admin, initErr = pgxpool.NewWithConfig(context.Background(), cfg)
	return initErr
}

// abandonedAfter is the age of a prepared transaction that no test
// still holds: the EventStoreDB store's commits (esdb.Coupled) prepare
// theirs for milliseconds, its tests for seconds.
const abandonedAfter = 2 * time.Minute

// rollBackAbandoned rolls back the prepared transactions left on the
// shared server by test processes that died. One holds back every
// reader of the outbox and of the log on the server, in any database
// (pg_snapshot_xmin is server-wide), so every later test would wait.
func rollBackAbandoned(ctx context.Context) error {
	conn, err := pgx.Connect(ctx, adminURL)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT gid, database FROM pg_prepared_xacts
		WHERE prepared < now() - make_interval(secs => $1)`, abandonedAfter.Seconds())
	if err != nil {
		return err
	}
	type xact struct{ gid, db string }
	xacts, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (x xact, err error) {
		return x, r.Scan(&x.gid, &x.db)
	})
	if err != nil {
		return err
	}
	for _, x := range xacts {
		// A prepared transaction is ended from its own database.
		db, err := pgx.Connect(ctx, urlFor(x.db))
		if err != nil {
			return err
		}
		_, err = db.Exec(ctx, `ROLLBACK PREPARED `+pg.QuoteLiteral(x.gid))
		db.Close(ctx)
		if err != nil {
			return fmt.Errorf("pgtest: roll back the abandoned prepared transaction %s: %w", x.gid, err)
		}
	}
	return nil
}

// ensureTemplate creates and migrates the template database for the
// current migrations, once for all processes (an advisory lock serialises
// them).
func ensureTemplate(ctx context.Context) error {
	fp, err := pg.MigrationsFingerprint()
	if err != nil {
		return err
	}
	template = "clientele_tmpl_" + fp
	conn, err := pgx.Connect(ctx, adminURL)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock(7311)`); err != nil {
		return err
	}
	defer conn.Exec(context.Background(), `SELECT pg_advisory_unlock(7311)`) //nolint:errcheck
	var exists bool
	if err := conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)`, template).Scan(&exists); err != nil {
		return err
	}
	if exists {
		return nil
	}
	building := template + "_build"
	if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+building); err != nil {
		return err
	}
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+building); err != nil {
		return err
	}
	pool, err := pg.Open(ctx, urlFor(building))
	if err != nil {
		return err
	}
	err = pg.Migrate(ctx, pool)
	pool.Close()
	if err != nil {
		return err
	}
	_, err = conn.Exec(ctx, fmt.Sprintf("ALTER DATABASE %s RENAME TO %s", building, template))
	return err
}

func urlFor(db string) string {
	u := adminURL
	q := ""
	if i := strings.Index(u, "?"); i >= 0 {
		u, q = u[:i], u[i:]
	}
	i := strings.LastIndex(u, "/")
	return u[:i+1] + db + q
}

// URL creates a fresh migrated database for the test and returns its
// connection string. The database is dropped when the test ends.
func URL(tb testing.TB) string {
	tb.Helper()
	if err := setup(); err != nil {
		tb.Fatalf("pgtest: %v", err)
	}
	raw := make([]byte, 6)
	_, _ = rand.Read(raw)
	name := "t_" + hex.EncodeToString(raw)
	ctx := context.Background()
	if _, err := admin.Exec(ctx, fmt.Sprintf("CREATE DATABASE %s TEMPLATE %s STRATEGY FILE_COPY", name, template)); err != nil {
		tb.Fatalf("pgtest: create database: %v", err)
	}
	tb.Cleanup(func() {
		if _, err := admin.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			tb.Logf("pgtest: drop %s: %v", name, err)
		}
	})
	return urlFor(name)
}

// UnreachablePool returns a pool on a server that is not there: a socket
// directory with no server in it (no TCP port, which another process
// could take meanwhile), closed when the test ends. Its queries fail as
// they do while the database is away.
func UnreachablePool(tb testing.TB) *pgxpool.Pool {
	tb.Helper()
	pool, err := pgxpool.New(context.Background(), "host="+tb.TempDir()+" user=clientele dbname=clientele connect_timeout=5")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(pool.Close)
	return pool
}

// NewPool creates a fresh migrated database and returns a pool on it,
// closed when the test ends.
func NewPool(tb testing.TB) *pgxpool.Pool {
	tb.Helper()
	url := URL(tb)
	pool, err := pg.Open(context.Background(), url)
	if err != nil {
		tb.Fatalf("pgtest: %v", err)
	}
	tb.Cleanup(pool.Close)
	return pool
}
