package pgtest

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/clientele/clientele/internal/pg"
)

// Server is a PostgreSQL server of one test alone, which the test may
// crash and start again. The shared server serves every other test of the
// run and must never be stopped: a test that takes the database away uses
// a Server.
//
// It is durable (fsync and synchronous commit on), unlike the shared
// server: with synchronous_commit off, a crash loses commits the server
// had already acknowledged, and the test would blame the service for
// losing what PostgreSQL lost.
//
// It listens on a Unix socket in a directory of its own, not on TCP: a
// port sits free while the server is down, and another process (a test
// of another package, another run) could take it, so that Start fails.
// Its URL names the directory (host=<dir>).
type Server struct {
	tb  testing.TB
	emb *pg.Embedded
}

// NewServer initialises and starts a private server in a temporary
// directory, with one empty database (not migrated: the code under test
// migrates it, as serve does). The server is stopped and its directories
// removed when the test ends.
func NewServer(tb testing.TB) *Server {
	tb.Helper()
	dir, sockets := serverDirs(tb)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	emb, err := pg.StartEmbedded(ctx, pg.EmbeddedOptions{Dir: dir, SocketDir: sockets})
	if err != nil {
		tb.Fatalf("pgtest: private server: %v", err)
	}
	return newServer(tb, emb)
}

// Standby starts a synchronous streaming standby of s (pg.StartStandby),
// a Server of its own, stopped when the test ends: every commit s
// acknowledges from then on is on the standby too.
func (s *Server) Standby() *Server {
	s.tb.Helper()
	dir, sockets := serverDirs(s.tb)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	emb, err := s.emb.StartStandby(ctx, pg.EmbeddedOptions{Dir: dir, SocketDir: sockets})
	if err != nil {
		s.tb.Fatalf("pgtest: standby: %v", err)
	}
	return newServer(s.tb, emb)
}

// Promote makes a standby the primary and returns once it accepts writes.
func (s *Server) Promote() {
	s.tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := s.emb.Promote(ctx); err != nil {
		s.tb.Fatalf("pgtest: %v", err)
	}
}

// MultiHostURL is the connection string of the database on servers (a
// primary and its standbys) that connects to whichever accepts writes.
func MultiHostURL(servers ...*Server) string {
	embs := make([]*pg.Embedded, len(servers))
	for i, s := range servers {
		embs[i] = s.emb
	}
	return pg.MultiHostURL(embs...)
}

func newServer(tb testing.TB, emb *pg.Embedded) *Server {
	tb.Cleanup(func() {
		if err := emb.Close(); err != nil {
			tb.Logf("pgtest: stop private server: %v", err)
		}
	})
	return &Server{tb: tb, emb: emb}
}

// serverDirs makes the directories of a private server: its cluster's,
// and its socket's, removed when the test ends.
func serverDirs(tb testing.TB) (dir, sockets string) {
	tb.Helper()
	dir, err := os.MkdirTemp(clustersDir(), "clientele-private-pg-")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { os.RemoveAll(dir) })
	// As root the server runs as another user, who must reach the
	// directory (MkdirTemp makes it 0700).
	if err := os.Chmod(dir, 0o755); err != nil {
		tb.Fatal(err)
	}
	// The socket's path must fit in 107 bytes: a short name, in a
	// temporary directory of a short path.
	sockets, err = os.MkdirTemp(socketBase(), "cpg")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { os.RemoveAll(sockets) })
	return dir, sockets
}

// URL is the connection string of the server's database, through its
// socket (host=<directory>). It stays valid across Crash and Start.
func (s *Server) URL() string { return s.emb.URL() }

// Crash stops the server at once, as a crash would (pg_ctl stop -m
// immediate): connections drop, and the next Start runs crash recovery.
func (s *Server) Crash() {
	s.tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := s.emb.Crash(ctx); err != nil {
		s.tb.Fatalf("pgtest: %v", err)
	}
}

// Start starts the server again on its socket and returns once it
// accepts connections.
func (s *Server) Start() {
	s.tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := s.emb.Restart(ctx); err != nil {
		s.tb.Fatalf("pgtest: %v", err)
	}
}

// socketBase is the directory to make the socket directory in: the
// temporary directory, unless its path is too long for a socket or holds
// characters the server's settings would not keep, when /tmp.
func socketBase() string {
	base := os.TempDir()
	// "/cpg" + MkdirTemp's up to 20 digits + "/.s.PGSQL.5432" within 107 bytes.
	if len(base) > 60 || strings.Trim(base, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-") != "" {
		return "/tmp"
	}
	return base
}
