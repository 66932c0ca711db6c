// Package natstest runs a private NATS server with JetStream for tests and
// for the load driver, from Debian's nats-server package, the way pgtest
// runs PostgreSQL: on a free port of the loopback interface, with its
// JetStream store in a temporary directory, stopped (and the directory
// removed) at the end.
package natstest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
)

// ErrNoServer reports that the nats-server program is missing.
var ErrNoServer = errors.New("natstest: nats-server not found on PATH or in /usr/sbin, /usr/bin: install it (Debian/Ubuntu: apt-get install nats-server)")

// Server is a running nats-server with JetStream.
type Server struct {
	bin, dir string
	url      string
	once     sync.Once
	// peer is set on a member of a Cluster: its name and the routes to
	// the other members (its own cluster URL is route).
	peer *peer

	mu      sync.Mutex
	cmd     *exec.Cmd
	out     *buffer
	done    chan struct{}
	err     error
	monitor string
	route   string // the cluster URL, nats://127.0.0.1:PORT, of a member
}

// peer is what a member of a Cluster adds to the command line.
type peer struct {
	name   string
	routes func() []string // the cluster URLs of the other members known so far
}

// New starts a server for tb and stops it when tb ends. A missing
// nats-server fails tb with a message naming the package to install.
func New(tb testing.TB) *Server {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := Start(ctx)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := s.Close(); err != nil {
			tb.Logf("natstest: %v", err)
		}
	})
	return s
}

// Binary returns the path of nats-server, or ErrNoServer.
func Binary() (string, error) {
	if p, err := exec.LookPath("nats-server"); err == nil {
		return p, nil
	}
	// Debian installs it in /usr/sbin, which is not on every user's PATH.
	for _, p := range []string{"/usr/sbin/nats-server", "/usr/bin/nats-server"} {
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return "", ErrNoServer
}

// Start starts a server and waits until it accepts clients. The caller
// closes it.
func Start(ctx context.Context) (*Server, error) {
	bin, err := Binary()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "clientele-nats-")
	if err != nil {
		return nil, err
	}
	s := &Server{bin: bin, dir: dir}
	// Port -1 lets the server pick a free port, which it writes in the
	// ports file once it listens: no window in which another process
	// could take a port chosen here.
	if err := s.start(ctx, "-1"); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return s, nil
}

// start runs the server on port and waits until it listens.
func (s *Server) start(ctx context.Context, port string) error {
	args := []string{"-a", "127.0.0.1", "-p", port, "-m", "-1", "-js", "-sd", filepath.Join(s.dir, "store"),
		"--ports_file_dir", s.dir}
	if s.peer != nil {
		// The cluster port is the same at every start: the other
		// members' routes point there.
		args = append(args, "-n", s.peer.name, "--cluster_name", clusterName,
			"--cluster", s.RouteURL(), "--routes", strings.Join(s.peer.routes(), ","))
	}
	cmd := exec.Command(s.bin, args...)
	out := &buffer{}
	cmd.Stdout, cmd.Stderr = out, out
	// The server dies with the process that started it, even killed.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("natstest: start %s: %w", s.bin, err)
	}
	done := make(chan struct{})
	s.mu.Lock()
	s.cmd, s.out, s.done = cmd, out, done
	s.mu.Unlock()
	go func() {
		s.err = cmd.Wait()
		close(done)
	}()
	ports := filepath.Join(s.dir, fmt.Sprintf("nats-server_%d.ports", cmd.Process.Pid))
	for {
		if b, err := os.ReadFile(ports); err == nil {
			var p struct{ Nats, Monitoring, Cluster []string }
			if json.Unmarshal(b, &p) == nil && len(p.Nats) > 0 && len(p.Monitoring) > 0 && (s.peer == nil || len(p.Cluster) > 0) {
				s.mu.Lock()
				s.url, s.monitor = p.Nats[0], p.Monitoring[0]
				s.mu.Unlock()
				return nil
			}
		}
		select {
		case <-done:
			return fmt.Errorf("natstest: nats-server exited: %v\n%s", s.err, out.String())
		case <-ctx.Done():
			s.stop()
			return fmt.Errorf("natstest: nats-server did not start: %w\n%s", ctx.Err(), out.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// Stop stops the server (an outage); Restart starts it again on the same
// port with the same store. Its clients reconnect by themselves.
func (s *Server) Stop() error { return s.stop() }

// Restart starts the server Stop stopped, on the same port.
func (s *Server) Restart(ctx context.Context) error {
	_, port, err := net.SplitHostPort(strings.TrimPrefix(s.URL(), "nats://"))
	if err != nil {
		return err
	}
	return s.start(ctx, port)
}

// stop sends SIGTERM, then SIGKILL after 10 s, and waits for the end.
func (s *Server) stop() error {
	s.mu.Lock()
	cmd, done := s.cmd, s.done
	s.mu.Unlock()
	select {
	case <-done:
		return nil
	default:
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-done:
		return nil
	case <-time.After(10 * time.Second):
		_ = cmd.Process.Kill()
		<-done
		return errors.New("natstest: nats-server did not stop on SIGTERM; killed")
	}
}

// URL is the server's client URL, nats://127.0.0.1:PORT.
func (s *Server) URL() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.url
}

// MonitorURL is the server's monitoring endpoint, http://127.0.0.1:PORT
// (a port of its own at each start), for /connz, /jsz and the like.
func (s *Server) MonitorURL() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.monitor
}

// RouteURL is a cluster member's cluster URL, nats://127.0.0.1:PORT,
// where the other members connect; "" for a server alone.
func (s *Server) RouteURL() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.route
}

// Kill ends the server with SIGKILL (a crash: what it had not written to
// its store is lost) and waits for its end; Restart starts it again.
func (s *Server) Kill() {
	s.mu.Lock()
	cmd, done := s.cmd, s.done
	s.mu.Unlock()
	_ = cmd.Process.Kill()
	<-done
}

// PID is the server's process id.
func (s *Server) PID() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cmd.Process.Pid
}

// Log is what the server printed so far (since its last start).
func (s *Server) Log() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.out.String()
}

// Close stops the server (SIGTERM, then SIGKILL after 10 s) and removes
// its store.
func (s *Server) Close() error {
	var err error
	s.once.Do(func() {
		err = s.stop()
		if rmErr := os.RemoveAll(s.dir); rmErr != nil && err == nil {
			err = rmErr
		}
	})
	return err
}

// buffer is a strings.Builder safe for the server's output and a reader.
type buffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (b *buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// JetStream connects to the NATS server at url for the rest of the test
// and returns its JetStream context, for a test to look at or change the
// streams and consumers a transport made.
func JetStream(tb testing.TB, url string) nats.JetStreamContext {
	tb.Helper()
	nc, err := nats.Connect(url)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(nc.Close)
	js, err := nc.JetStream()
	if err != nil {
		tb.Fatal(err)
	}
	return js
}
