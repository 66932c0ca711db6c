package main

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/clientele/clientele/internal/pg/pgtest"
)

// unavailableFirst is a TCP proxy to PostgreSQL that closes the first
// refuse connections as soon as it accepts them (the client reads an
// unexpected end, as from a server going down or a failover in
// progress) and forwards every later one.
type unavailableFirst struct {
	addr     string
	refuse   int64
	accepted atomic.Int64
}

func newUnavailableFirst(t *testing.T, target string, refuse int64) *unavailableFirst {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	p := &unavailableFirst{addr: ln.Addr().String(), refuse: refuse}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			if p.accepted.Add(1) <= p.refuse {
				c.Close()
				continue
			}
			go func() {
				defer c.Close()
				s, err := net.Dial("tcp", target)
				if err != nil {
					return
				}
				defer s.Close()
				go func() { _, _ = io.Copy(s, c); s.Close() }()
				_, _ = io.Copy(c, s)
			}()
		}
	}()
	return p
}

// TestStartWaitsForTheDatabase: a command started while its database is
// unavailable waits for it, logging each failed attempt, and runs once
// it answers; with --database-wait=0 it gives up at the first failure;
// a failure that waiting does not mend (a wrong password) ends it at
// once, with no wait.
func TestStartWaitsForTheDatabase(t *testing.T) {
	u, err := url.Parse(pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	through := func(p *unavailableFirst, password string) string {
		v := *u
		v.Host = p.addr
		if password != "" {
			v.User = url.UserPassword(v.User.Username(), password)
		}
		return v.String()
	}
	runWith := func(dbURL, wait string) (string, error) {
		var out, errOut bytes.Buffer
		err := run(context.Background(), []string{"company", "create", "acme"}, &out, &errOut,
			env(map[string]string{"DATABASE_URL": dbURL, "CLIENTELE_LOG_LEVEL": "warn", "CLIENTELE_DATABASE_WAIT": wait}))
		return errOut.String(), err
	}

	t.Run("waits", func(t *testing.T) {
		p := newUnavailableFirst(t, u.Host, 3)
		logged, err := runWith(through(p, ""), "1m")
		if err != nil {
			t.Fatalf("company create through a database unavailable for three connections: %v\n%s", err, logged)
		}
		if n := strings.Count(logged, "the database is unavailable; waiting for it"); n == 0 || p.accepted.Load() <= 3 {
			t.Errorf("%d waits logged, %d connections: want at least one wait and a connection after the three refused\n%s", n, p.accepted.Load(), logged)
		}
	})
	t.Run("gives up with no wait", func(t *testing.T) {
		p := newUnavailableFirst(t, u.Host, 1000)
		logged, err := runWith(through(p, ""), "0")
		if err == nil || strings.Contains(logged, "waiting for it") {
			t.Fatalf("error %v, log %q: want a failure with no wait", err, logged)
		}
	})
	t.Run("a wrong password is not waited for", func(t *testing.T) {
		p := newUnavailableFirst(t, u.Host, 0)
		logged, err := runWith(through(p, "not-the-password"), "1m")
		if err == nil || !strings.Contains(err.Error(), "password authentication failed") || strings.Contains(logged, "waiting for it") {
			t.Fatalf("error %v, log %q: want the server's refusal of the password, with no wait", err, logged)
		}
	})
}
