package main

import (
	"context"
	"errors"
	"io"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/clientele/clientele/commands/imports"
	"github.com/clientele/clientele/domain"
	"github.com/clientele/clientele/domain/access"
	"github.com/clientele/clientele/domain/company"
	"github.com/clientele/clientele/domain/importing"
	"github.com/clientele/clientele/readmodels"
	"github.com/clientele/clientele/sftp"
)

// dyingListener hands out its connections, then fails as a listener
// whose socket is gone does.
type dyingListener struct {
	conns chan net.Conn
	err   error
}

func (l *dyingListener) Accept() (net.Conn, error) {
	if c, ok := <-l.conns; ok {
		return c, nil
	}
	return nil, l.err
}
func (l *dyingListener) Close() error   { return nil }
func (l *dyingListener) Addr() net.Addr { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 2222} }

// noSFTPDeps stands for every dependency of sftp.Server: none is reached
// by a server whose listener fails before anyone logs in.
type noSFTPDeps struct{}

func (noSFTPDeps) BySlug(context.Context, string) (company.Company, error) {
	return company.Company{}, domain.Errorf(domain.NotFound, "no company")
}
func (noSFTPDeps) AuthenticateToken(context.Context, string, string) (access.Principal, error) {
	return access.Principal{}, domain.Errorf(domain.Unauthorized, "no token")
}
func (noSFTPDeps) Recheck(context.Context, access.Principal) (access.Principal, error) {
	return access.Principal{}, domain.Errorf(domain.Unauthorized, "no token")
}
func (noSFTPDeps) ByFingerprint(context.Context, string, string) (access.SFTPKey, error) {
	return access.SFTPKey{}, domain.Errorf(domain.NotFound, "no key")
}
func (noSFTPDeps) Take(string, string) (func(error), error) { return func(error) {}, nil }
func (noSFTPDeps) Handle(context.Context, imports.StageUpload) (imports.StagedUpload, error) {
	return imports.StagedUpload{}, errors.New("no uploads")
}
func (noSFTPDeps) Run(context.Context, string, string) (readmodels.ImportRun, error) {
	return readmodels.ImportRun{}, domain.Errorf(domain.NotFound, "no run")
}
func (noSFTPDeps) Rejections(context.Context, string, string, int) ([]importing.Rejection, string, error) {
	return nil, "", nil
}

// TestSFTPListenerFailureEndsRun: when the SFTP listener fails, run
// closes the connections it holds, stops the imports and returns the
// listener's error without waiting for its context to end, so that
// serve stops with it (as it does when the HTTP server fails).
func TestSFTPListenerFailureEndsRun(t *testing.T) {
	dir := t.TempDir()
	key, _, err := sftp.LoadHostKey(filepath.Join(dir, "host_key"))
	if err != nil {
		t.Fatal(err)
	}
	var deps noSFTPDeps
	srv, err := sftp.New(sftp.Config{
		HostKey: key, Dir: filepath.Join(dir, "sftp"), MaxFileBytes: 1 << 20,
		Companies: deps, Tokens: deps, Keys: deps, LogIns: deps, Uploads: deps, Runs: deps,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	// A client connected, in its handshake, when the listener dies.
	client, server := net.Pipe()
	defer client.Close()
	died := errors.New("listener died")
	ln := &dyingListener{conns: make(chan net.Conn, 1), err: died}
	ln.conns <- server
	close(ln.conns)

	done := make(chan error, 1)
	go func() { done <- (&sftpServer{srv: srv, ln: ln}).run(context.Background()) }()
	select {
	case err = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("run did not return when its listener failed")
	}
	if !errors.Is(err, died) || !strings.Contains(err.Error(), "accept") {
		t.Errorf("run returned %v; want the listener's error", err)
	}
	// The client's connection was closed: reading it ends.
	if _, err := io.Copy(io.Discard, client); err != nil && !errors.Is(err, io.ErrClosedPipe) {
		t.Errorf("client connection: %v", err)
	}
}
