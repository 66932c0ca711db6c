package pgtest

import (
	"context"
	"os"
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
type Server struct {
	tb  testing.TB
	emb *pg.Embedded
}

// NewServer initialises and starts a private server in a temporary
// directory, with one empty database (not migrated: the code under test
// migrates it, as serve does). The server is stopped and its directory
// removed when the test ends.
func NewServer(tb testing.TB) *Server {
	tb.Helper()
	dir, err := os.MkdirTemp("", "clientele-private-pg-")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { os.RemoveAll(dir) })
	// As root the server runs as another user, who must reach the
	// directory (MkdirTemp makes it 0700).
	if err := os.Chmod(dir, 0o755); err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	emb, err := pg.StartEmbedded(ctx, pg.EmbeddedOptions{Dir: dir})
	if err != nil {
		tb.Fatalf("pgtest: private server: %v", err)
	}
	tb.Cleanup(func() {
		if err := emb.Close(); err != nil {
			tb.Logf("pgtest: stop private server: %v", err)
		}
	})
	return &Server{tb: tb, emb: emb}
}

// URL is the connection string of the server's database. It stays valid
// across Crash and Start.
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

// Start starts the server again on its port and returns once it accepts
// connections.
func (s *Server) Start() {
	s.tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := s.emb.Restart(ctx); err != nil {
		s.tb.Fatalf("pgtest: %v", err)
	}
}
