package sftp_test

import (
	"bufio"
	"context"
	"errors"
	"log/slog"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/clientele/clientele/sftp"
)

// banner reports whether the server greets a raw connection with its
// version line (it is served) or closes it (it is refused).
func banner(t *testing.T, c net.Conn) bool {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			t.Fatal("the server neither greeted nor closed the connection")
		}
		return false
	}
	return strings.HasPrefix(line, "SSH-2.0-")
}

// TestSFTPConnectionLimits: connections that do not log in are bounded,
// from one address and in all, and so are connections of any kind: one
// more is closed at once, and a slot is free again once one closes.
func TestSFTPConnectionLimits(t *testing.T) {
	for name, o := range map[string]option{
		"not logged in, per address": with(func(c *sftp.Config) { c.MaxUnauthenticatedPerAddress = 2 }),
		"not logged in":              with(func(c *sftp.Config) { c.MaxUnauthenticated = 2 }),
		"in all":                     with(func(c *sftp.Config) { c.MaxConnections = 2 }),
	} {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, o)
			var idle []net.Conn
			for range 2 {
				c, err := net.Dial("tcp", e.addr)
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				if !banner(t, c) {
					t.Fatal("a connection within the limit was refused")
				}
				idle = append(idle, c)
			}
			c, err := net.Dial("tcp", e.addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if banner(t, c) {
				t.Error("a connection past the limit was served")
			}
			idle[0].Close()
			waitFor(t, "a slot to be free again", func() bool {
				c, err := net.Dial("tcp", e.addr)
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				return banner(t, c)
			})
		})
	}
}

// TestSFTPConnectionsPerCompany: a company's logged-in connections are
// bounded; one more is told why on its first channel. Other companies
// are not affected.
func TestSFTPConnectionsPerCompany(t *testing.T) {
	e := newEnv(t, with(func(c *sftp.Config) { c.MaxConnectionsPerCompany = 1 }))
	first, err := ssh.Dial("tcp", e.addr, &ssh.ClientConfig{
		User: "acme", Auth: []ssh.AuthMethod{ssh.Password(e.adminToken)}, HostKeyCallback: ssh.FixedHostKey(e.hostKey.PublicKey()),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	if _, err := e.dial("acme", e.adminToken); err == nil || !strings.Contains(err.Error(), "too many connections of this company") {
		t.Errorf("a second connection: %v", err)
	}
	if _, err := e.dial("globex", e.globexToken); err != nil {
		t.Errorf("globex: %v", err)
	}
	first.Close()
	waitFor(t, "acme's connection to be free again", func() bool {
		_, err := e.dial("acme", e.adminToken)
		return err == nil
	})
}

// TestSFTPSessionsPerConnection: one connection opens a bounded number of
// sessions.
func TestSFTPSessionsPerConnection(t *testing.T) {
	e := newEnv(t, with(func(c *sftp.Config) { c.MaxSessionsPerConnection = 2 }))
	conn, err := ssh.Dial("tcp", e.addr, &ssh.ClientConfig{
		User: "acme", Auth: []ssh.AuthMethod{ssh.Password(e.adminToken)}, HostKeyCallback: ssh.FixedHostKey(e.hostKey.PublicKey()),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var open []*ssh.Session
	for range 2 {
		s, err := conn.NewSession()
		if err != nil {
			t.Fatalf("a session within the limit: %v", err)
		}
		open = append(open, s)
	}
	if s, err := conn.NewSession(); err == nil {
		s.Close()
		t.Error("a session past the limit was opened")
	}
	open[0].Close()
	waitFor(t, "a session to be free again", func() bool {
		s, err := conn.NewSession()
		if err == nil {
			s.Close()
		}
		return err == nil
	})
}

// TestSFTPOpenFilesPerCompany: the files a company holds open, uploads
// and downloads over all its connections, are bounded: each is a
// descriptor of the process.
func TestSFTPOpenFilesPerCompany(t *testing.T) {
	e := newEnv(t, with(func(c *sftp.Config) { c.MaxOpenFilesPerCompany = 2 }))
	c1, c2 := e.mustDial(), e.mustDial()
	put(t, c1, "toclientele/a.part", []byte("a"))
	up, err := c1.Create("toclientele/b.part")
	if err != nil {
		t.Fatal(err)
	}
	down, err := c2.Open("toclientele/a.part")
	if err != nil {
		t.Fatal(err)
	}
	if f, err := c2.Create("toclientele/c.part"); err == nil {
		f.Close()
		t.Error("an upload past the limit was opened")
	}
	if f, err := c1.Open("toclientele/a.part"); err == nil {
		f.Close()
		t.Error("a download past the limit was opened")
	}
	// globex has its own.
	g, err := e.dial("globex", e.globexToken)
	if err != nil {
		t.Fatal(err)
	}
	put(t, g, "toclientele/g.part", []byte("g"))
	if err := errors.Join(up.Close(), down.Close()); err != nil {
		t.Fatal(err)
	}
	put(t, c2, "toclientele/c.part", []byte("c"))
	if _, err := read(c1, "toclientele/c.part"); err != nil {
		t.Errorf("after closing: %v", err)
	}
}

// slowCut delays the log of an upload cut short, which its session writes
// as it closes the file.
type slowCut struct{ slog.Handler }

func (h slowCut) Handle(ctx context.Context, r slog.Record) error {
	if strings.Contains(r.Message, "upload cut short") {
		time.Sleep(300 * time.Millisecond)
	}
	return h.Handler.Handle(ctx, r)
}

func (h slowCut) WithAttrs(as []slog.Attr) slog.Handler { return slowCut{h.Handler.WithAttrs(as)} }
func (h slowCut) WithGroup(g string) slog.Handler       { return slowCut{h.Handler.WithGroup(g)} }

// TestSFTPServeWaitsForSessions: Serve returns once every session closed
// the files it held open, so nothing of a stopped server still writes
// in its directory (whose lock the next one takes).
func TestSFTPServeWaitsForSessions(t *testing.T) {
	e := newEnv(t, with(func(c *sftp.Config) { c.Logger = slog.New(slowCut{c.Logger.Handler()}) }))
	c := e.mustDial()
	f, err := c.Create("toclientele/customers.csv")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte("customer_id,email\n")); err != nil {
		t.Fatal(err)
	}
	e.stop()
	if !strings.Contains(e.logs.String(), "upload cut short") {
		t.Error("Serve returned before the session closed its upload")
	}
	if entries, _ := os.ReadDir(e.cfg.Dir + "/incoming"); len(entries) != 0 {
		t.Errorf("incoming/ holds %d files after Serve returned", len(entries))
	}
}
