package main

import (
	"context"
	"fmt"
	"net"
	"path/filepath"

	"github.com/clientele/clientele/api"
	clientele "github.com/clientele/clientele/app"
	"github.com/clientele/clientele/sftp"
)

// sftpFlags configure the SFTP drop directory of serve (docs/sftp.md).
type sftpFlags struct {
	// addr is where it listens; off when empty.
	addr string
	// hostKey is the host key file; default <data-dir>/sftp_host_ed25519_key.
	hostKey string
	// dir holds the trees and the import queue; default <data-dir>/sftp.
	dir string
}

// sftpServer is a running SFTP server: its listener, ready to serve.
type sftpServer struct {
	srv *sftp.Server
	ln  net.Listener
}

// startSFTP loads (or creates) the host key, opens the drop directory and
// listens, driven by the application value the API drives; it returns
// nil when f.addr is empty.
func startSFTP(g *globals, a *app, f sftpFlags, maxUpload int64, application clientele.Application, logIns api.LogIns) (*sftpServer, error) {
	if f.addr == "" {
		return nil, nil
	}
	keyPath := f.hostKey
	if keyPath == "" {
		keyPath = filepath.Join(g.dataDir, "sftp_host_ed25519_key")
	}
	key, created, err := sftp.LoadHostKey(keyPath)
	if err != nil {
		return nil, fmt.Errorf("--sftp-host-key: %w", err)
	}
	if created {
		a.log.Warn("created a new SFTP host key: back it up, clients that know the old one refuse a new one", "path", keyPath)
	}
	dir := f.dir
	if dir == "" {
		dir = filepath.Join(g.dataDir, "sftp")
	}
	srv, err := sftp.New(sftp.Config{
		HostKey:      key,
		Dir:          dir,
		MaxFileBytes: maxUpload,
		Companies:    application.Queries.Companies,
		Tokens:       application.Commands.Authenticator,
		Keys:         application.Queries.SFTPKeys,
		LogIns:       logIns,
		Uploads:      application.Commands.Uploads,
		Runs:         application.Queries.Imports,
		Logger:       a.log,
	})
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", f.addr)
	if err != nil {
		srv.Close()
		return nil, fmt.Errorf("--sftp-addr: %w", err)
	}
	return &sftpServer{srv: srv, ln: ln}, nil
}

// run serves and imports until ctx ends, or until the server fails: a
// listener that fails ends the imports too (a file being staged stays
// queued, for the next start), and run returns its error at once, so
// that serve stops as it does when the HTTP server fails.
func (s *sftpServer) run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make(chan error, 1)
	go func() { errs <- s.srv.Run(ctx) }()
	err := s.srv.Serve(ctx, s.ln)
	cancel()
	if rerr := <-errs; err == nil {
		err = rerr
	}
	return err
}

// welcome says how to connect, for printWelcome.
func (s *sftpServer) welcome(demoSlug string) string {
	if s == nil {
		return ""
	}
	host, port, _ := net.SplitHostPort(s.ln.Addr().String())
	user := "<company slug>"
	if demoSlug != "" {
		user = demoSlug
	}
	return fmt.Sprintf("SFTP drop directory on %s (host key %s)\n"+
		"Connect with an access token as password:\n  sftp -P %s %s@%s\n  sftp> put customers.csv toclientele/\n",
		s.ln.Addr().String(), s.srv.Fingerprint(), port, user, host)
}
