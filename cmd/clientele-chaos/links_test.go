package main

import (
	"context"
	"io"
	"net"
	"net/url"
	"strings"
	"testing"
	"time"
)

// echoServer answers every connection with what it reads.
func echoServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_, _ = io.Copy(c, c)
			}()
		}
	}()
	return ln.Addr().String()
}

// echo sends ping through addr and reports whether it came back within
// wait.
func echo(addr string, wait time.Duration) error {
	c, err := net.DialTimeout("tcp", addr, wait)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(wait))
	if _, err := c.Write([]byte("ping")); err != nil {
		return err
	}
	_, err = io.ReadFull(c, make([]byte, 4))
	return err
}

// A partition of a node's link drops every byte of new connections (and
// of those it holds) until it is healed; each node's proxy is its own.
func TestLinkPartitionAndHealing(t *testing.T) {
	l, err := startLinks(2, map[string]string{natsLink(0): echoServer(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer l.close()
	cut, other := "127.0.0.1:"+l.port(0, natsLink(0)), "127.0.0.1:"+l.port(1, natsLink(0))
	if err := echo(cut, time.Second); err != nil {
		t.Fatalf("before the partition: %v", err)
	}
	if err := l.addToxic(0, []string{natsLink(0)}, "p", "timeout", `{"timeout":0}`); err != nil {
		t.Fatal(err)
	}
	if err := echo(cut, 300*time.Millisecond); err == nil {
		t.Error("an echo went through the partition")
	}
	if err := echo(other, time.Second); err != nil {
		t.Errorf("the other node's link is cut too: %v", err)
	}
	l.removeToxic(context.Background(), 0, []string{natsLink(0)}, "p")
	if err := echo(cut, time.Second); err != nil {
		t.Errorf("after the healing: %v", err)
	}
}

// A node's database URL names its own proxies, in the order of the
// servers, and keeps the rest of the multi-host URL.
func TestProxiedDatabaseURL(t *testing.T) {
	l, err := startLinks(1, map[string]string{pgLink(0): "127.0.0.1:1", pgLink(1): "127.0.0.1:2"})
	if err != nil {
		t.Fatal(err)
	}
	defer l.close()
	got, err := l.proxiedDatabaseURL("postgres://u:p@/clientele?host=127.0.0.1%2C127.0.0.1&port=5001%2C5002&sslmode=disable&target_session_attrs=read-write", 0)
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(got)
	q := u.Query()
	if want := l.port(0, pgLink(0)) + "," + l.port(0, pgLink(1)); q.Get("port") != want || q.Get("target_session_attrs") != "read-write" || u.User.String() != "u:p" {
		t.Errorf("got %s, want ports %s and the rest kept", got, want)
	}
	if _, err := l.proxiedDatabaseURL("postgres://u:p@/clientele?host=/tmp/s%2C/tmp/s&port=1%2C2", 0); err == nil || !strings.Contains(err.Error(), "sockets") {
		t.Errorf("a socket URL: %v, want refused", err)
	}
}

// Every schedule has each fault kind, the failover once.
func TestScheduleHasEachFaultKind(t *testing.T) {
	for _, d := range []time.Duration{60 * time.Second, 90 * time.Second, 10 * time.Minute} {
		for seed := range uint64(20) {
			n := map[string]int{}
			for _, f := range schedule(seed, d) {
				n[f.Kind]++
				if f.At+f.Down > d {
					t.Errorf("seed %d, %v: %s at %v for %v ends after the run", seed, d, f.Kind, f.At, f.Down)
				}
			}
			for _, k := range faultKinds {
				if n[k] == 0 || k == "pg-failover" && n[k] != 1 {
					t.Errorf("seed %d, %v: %d of %s", seed, d, n[k], k)
				}
			}
		}
	}
}
