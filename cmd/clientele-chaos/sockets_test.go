package main

import (
	"net"
	"os"
	"testing"
)

// The process that holds a connection's other end is found by the
// connection's two addresses, and nobody once it is closed.
func TestSocketOwnerNamesTheProcess(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		accepted <- c
	}()
	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	server := <-accepted
	defer server.Close()
	pids := map[int]string{os.Getpid(): "this process", os.Getppid(): "its parent"}
	if got := socketOwner(server.RemoteAddr().String(), ln.Addr().String(), pids); got != "this process" {
		t.Errorf("owner %q, want this process", got)
	}
	if got := socketOwner(server.RemoteAddr().String(), ln.Addr().String(), map[int]string{os.Getppid(): "its parent"}); got != "" {
		t.Errorf("owner %q among processes that do not hold it, want none", got)
	}
	conn.Close()
	if got := socketOwner(server.RemoteAddr().String(), ln.Addr().String(), pids); got != "" {
		t.Errorf("owner %q of a closed connection, want none", got)
	}
}
