package pg

import (
	"context"
	"net"
	"os"
	"testing"
	"time"
)

// TestStartEmbeddedPortTaken: the port chosen for the server is taken by
// another process before the server binds it (as any process may take a
// port free a moment ago): the server starts on another port instead of
// failing.
func TestStartEmbeddedPortTaken(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	takenPort := taken.Addr().(*net.TCPAddr).Port
	picks := 0
	pickPort = func() (int, error) {
		picks++
		if picks == 1 {
			return takenPort, nil
		}
		return freePort()
	}
	defer func() { pickPort = freePort }()

	dir, err := os.MkdirTemp("", "clientele-port-pg-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	// As root the server runs as another user, who must reach it.
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	emb, err := StartEmbedded(ctx, EmbeddedOptions{Dir: dir, Fast: true})
	if err != nil {
		t.Fatalf("start with its first port taken: %v", err)
	}
	defer emb.Close()
	if picks != 2 || emb.port == takenPort {
		t.Fatalf("ports picked: %d, server on %d (the taken one is %d): want a second pick", picks, emb.port, takenPort)
	}
	pool, err := Open(ctx, emb.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	if err := pool.Ping(ctx); err != nil {
		t.Fatalf("the server on its second port: %v", err)
	}
}
