// Package sftp is the SFTP drop directory (docs/sftp.md): an SSH server
// that speaks the sftp subsystem and nothing else, through which a
// company drops files of records that are imported through the same
// pipeline as HTTP uploads (imports.StageUpload, source "sftp").
//
// Each company logs in with its slug as user name and an access token as
// password, or a registered public key, and sees a virtual tree of its
// own: toclientele/ (drop files here), toclientele/processed/ and
// toclientele/failed/. Nothing else exists for it: paths are resolved
// within the tree, links are refused.
//
// Storage (docs/sftp.md, "How files are kept"). SFTP clients write a file
// with many concurrent, out-of-order writes, so an upload lands in a
// spool file of its own (incoming/<id>) until its writer closes it. A
// complete file with a final name is then committed by one atomic rename
// into queue/<id>, after its job (queue/<id>.json: company, name, who
// sent it) was written and synced: from that rename on, the file is to be
// imported as run <id>, and nothing else. The queue is staged one file at
// a time with StageUpload{RunID: <id>}; a run id is scheduled at most
// once, so a process killed at any point stages the file again on start
// (discarding what it staged before) or, if the run was scheduled, only
// moves it on. An upload cut short never reaches the queue and is
// deleted.
package sftp

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/clientele/clientele/commands/imports"
	"github.com/clientele/clientele/domain/access"
	"github.com/clientele/clientele/domain/company"
	"github.com/clientele/clientele/domain/importing"
	"github.com/clientele/clientele/internal/backoff"
	"github.com/clientele/clientele/readmodels"
)

// Companies finds the company a log-in names; readmodels.Companies
// implements it.
type Companies interface {
	// BySlug returns the company, or a domain.NotFound error.
	BySlug(ctx context.Context, slug string) (company.Company, error)
}

// Tokens authenticates access tokens; readmodels.Access implements it.
type Tokens interface {
	// AuthenticateToken returns the principal of a token of the company,
	// or a domain.Unauthorized error.
	AuthenticateToken(ctx context.Context, companyID, token string) (access.Principal, error)
	// Recheck returns the principal a token's principal has now, or a
	// domain.Unauthorized error once the token is revoked.
	Recheck(ctx context.Context, p access.Principal) (access.Principal, error)
}

// Keys finds registered public keys; readmodels.SFTPKeys implements it.
type Keys interface {
	// ByFingerprint returns the company's key, or a domain.NotFound error.
	ByFingerprint(ctx context.Context, companyID, fingerprint string) (access.SFTPKey, error)
}

// LogIns limits failed log-ins; api.LogIns (Server.LogIns) implements it,
// so that HTTP and SFTP log-ins share their counts.
type LogIns interface {
	// Take counts an attempt, or refuses it; done reports its outcome (a
	// domain.Unauthorized error keeps the count).
	Take(account, ip string) (done func(error), err error)
}

// Uploads stages uploads; imports.StageUploadHandler implements it.
type Uploads interface {
	Handle(ctx context.Context, cmd imports.StageUpload) (imports.StagedUpload, error)
}

// Runs reads import runs; readmodels.Imports implements it.
type Runs interface {
	// Run returns a scheduled (or later) run of the company, or a
	// domain.NotFound error.
	Run(ctx context.Context, companyID, runID string) (readmodels.ImportRun, error)
	// Rejections returns a page of the run's rejections.
	Rejections(ctx context.Context, runID, after string, limit int) ([]importing.Rejection, string, error)
}

// Config configures a Server.
type Config struct {
	// HostKey is the server's key (LoadHostKey).
	HostKey ssh.Signer
	// Dir holds the companies' trees, the uploads in progress and the
	// import queue. It must be one file system: files move by rename.
	Dir string
	// MaxFileBytes is the largest file accepted, as sent and, for .gz
	// files, uncompressed too: the limit of HTTP uploads.
	MaxFileBytes int64
	Companies    Companies
	Tokens       Tokens
	Keys         Keys
	LogIns       LogIns
	Uploads      Uploads
	Runs         Runs
	Logger       *slog.Logger
	// PollInterval is how often the results of runs not yet finished are
	// looked at, to rewrite their result files. Default 1 s.
	PollInterval time.Duration
	// RetryMax bounds the wait before staging a file again after a
	// failure that may pass (the database away). Default 30 s.
	RetryMax time.Duration

	// MaxConnections bounds the connections served at once, logged in or
	// not; one more is closed at once. Default 512.
	MaxConnections int
	// MaxUnauthenticated bounds the connections not yet logged in, in all
	// and (MaxUnauthenticatedPerAddress) from one client address: each
	// holds a descriptor and a goroutine for up to 30 s, for nothing.
	// Defaults 64 and 8.
	MaxUnauthenticated           int
	MaxUnauthenticatedPerAddress int
	// MaxConnectionsPerCompany bounds a company's logged-in connections:
	// one more is told so and closed. Default 16.
	MaxConnectionsPerCompany int
	// MaxSessionsPerConnection bounds the sessions one connection opens
	// (each an SFTP server of its own). Default 4.
	MaxSessionsPerConnection int
	// MaxOpenFilesPerCompany bounds the files a company holds open, being
	// uploaded or downloaded, over all its connections: each is a
	// descriptor of the process. Default 64.
	MaxOpenFilesPerCompany int
	// MinFreeBytes is the free space below which Dir's file system takes
	// no new upload: what is left is for the files already received to
	// be queued, imported and given their results. Default 1 GiB.
	MinFreeBytes int64
	// RecheckInterval is how often an open connection's credential is
	// checked between its requests: a revoked token or a removed key
	// closes its connections within it. Each request that acts (opening,
	// renaming or removing a file, completing an upload) checks it too,
	// and so does the import of each queued file. Default 2 s.
	RecheckInterval time.Duration
}

// Validate reports every missing dependency at once.
func (c Config) Validate() error {
	var errs []error
	check := func(ok bool, name string) {
		if !ok {
			errs = append(errs, fmt.Errorf("sftp: Config.%s is not set", name))
		}
	}
	check(c.HostKey != nil, "HostKey")
	check(c.Dir != "", "Dir")
	check(c.MaxFileBytes > 0, "MaxFileBytes")
	check(c.Companies != nil, "Companies")
	check(c.Tokens != nil, "Tokens")
	check(c.Keys != nil, "Keys")
	check(c.LogIns != nil, "LogIns")
	check(c.Uploads != nil, "Uploads")
	check(c.Runs != nil, "Runs")
	return errors.Join(errs...)
}

func (c *Config) setDefaults() {
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.PollInterval <= 0 {
		c.PollInterval = time.Second
	}
	if c.RetryMax <= 0 {
		c.RetryMax = 30 * time.Second
	}
	if c.RecheckInterval <= 0 {
		c.RecheckInterval = defaultRecheckInterval
	}
	if c.MinFreeBytes <= 0 {
		c.MinFreeBytes = 1 << 30
	}
	for _, l := range []struct {
		v   *int
		def int
	}{
		{&c.MaxConnections, defaultMaxConnections},
		{&c.MaxUnauthenticated, defaultMaxUnauthenticated},
		{&c.MaxUnauthenticatedPerAddress, defaultMaxUnauthenticatedPerAddress},
		{&c.MaxConnectionsPerCompany, defaultMaxConnectionsPerCompany},
		{&c.MaxSessionsPerConnection, defaultMaxSessionsPerConnection},
		{&c.MaxOpenFilesPerCompany, defaultMaxOpenFilesPerCompany},
	} {
		if *l.v <= 0 {
			*l.v = l.def
		}
	}
}

// Server is the SFTP server and the import of its files.
type Server struct {
	cfg   Config
	log   *slog.Logger
	ssh   *ssh.ServerConfig
	store *store
	queue *queue
	// uploads are the uploads in progress, shown in listings.
	uploads uploads
	// held counts the connections, sessions and open files against the
	// Config limits.
	held counts

	mu    sync.Mutex
	conns map[net.Conn]struct{}
	// wg counts the connections and their sessions: Serve returns once
	// every upload they held open was closed (deleted, or queued).
	wg sync.WaitGroup
}

// New checks cfg, takes the lock of cfg.Dir (one server per directory:
// two would import each other's queue), and reads what a previous process
// left there: uploads cut short are deleted, complete files queued again.
// It does not serve yet (Serve) nor import (Run).
func New(cfg Config) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.setDefaults()
	st, err := openStore(cfg.Dir)
	if err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, log: cfg.Logger, store: st, conns: map[net.Conn]struct{}{}}
	if s.queue, err = newQueue(s); err != nil {
		st.close()
		return nil, err
	}
	// Before anything is served: a new upload must not be taken for a
	// leftover.
	if err := s.queue.recover(); err != nil {
		st.close()
		return nil, err
	}
	s.ssh = s.serverConfig()
	return s, nil
}

// Fingerprint is the host key's SHA-256 fingerprint, as OpenSSH prints
// it: clients compare it with what they are shown on first connection.
func (s *Server) Fingerprint() string { return ssh.FingerprintSHA256(s.cfg.HostKey.PublicKey()) }

// Close releases the directory's lock. Call it after Serve and Run have
// returned.
func (s *Server) Close() error { return s.store.close() }

// Serve accepts connections on ln until ctx ends, then closes them all
// (an upload cut so imports nothing) and returns once they are done. If
// ln fails (not for want of descriptors), it closes them all too and
// returns the error: the caller is to stop, and must not wait for its
// clients to leave first.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	closeAll := func() {
		ln.Close()
		s.mu.Lock()
		for c := range s.conns {
			c.Close()
		}
		s.mu.Unlock()
	}
	stop := context.AfterFunc(ctx, closeAll)
	defer stop()
	defer s.wg.Wait()
	// failures counts the accepts in a row that failed for want of
	// descriptors.
	var failures int
	for {
		c, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() || errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) {
				// Out of descriptors: wait as net/http does, rather than spin.
				failures++
				time.Sleep(backoff.Doubling{Min: 5 * time.Millisecond, Max: time.Second}.After(failures))
				continue
			}
			closeAll()
			return fmt.Errorf("sftp: accept: %w", err)
		}
		failures = 0
		if !s.held.take(keyConns, s.cfg.MaxConnections) {
			s.log.Warn("sftp: too many connections; refused", "remote", c.RemoteAddr().String(), "max", s.cfg.MaxConnections)
			c.Close()
			continue
		}
		s.mu.Lock()
		if ctx.Err() != nil {
			s.mu.Unlock()
			s.held.give(keyConns)
			c.Close()
			return nil
		}
		s.conns[c] = struct{}{}
		s.wg.Add(1)
		s.mu.Unlock()
		go func() {
			defer s.wg.Done()
			defer func() {
				s.mu.Lock()
				delete(s.conns, c)
				s.mu.Unlock()
				c.Close()
				s.held.give(keyConns)
			}()
			s.serveConn(ctx, c)
		}()
	}
}

// Run imports the queued files until ctx ends: first those a previous
// process left (New), then each as it is queued. It also rewrites the
// result files of runs that finish.
func (s *Server) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		s.queue.watchResults(ctx)
	}()
	s.queue.run(ctx)
	wg.Wait()
	return nil
}

// LoadHostKey reads the host key at path, or creates an ed25519 key there
// (mode 0600) when there is none. created tells the caller to say so.
func LoadHostKey(path string) (key ssh.Signer, created bool, err error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		if err := createHostKey(path); err != nil {
			return nil, false, err
		}
		created = true
		b, err = os.ReadFile(path)
	}
	if err != nil {
		return nil, false, fmt.Errorf("sftp: host key: %w", err)
	}
	key, err = ssh.ParsePrivateKey(b)
	if err != nil {
		return nil, false, fmt.Errorf("sftp: host key %s: %w", path, err)
	}
	return key, created, nil
}

// createHostKey writes a new ed25519 key in OpenSSH's format: whole to a
// temporary file, then linked to path, which fails if path exists. Of two
// processes starting at once, one creates it and the other reads it, and
// never a part of it.
func createHostKey(path string) error {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return fmt.Errorf("sftp: host key: %w", err)
	}
	block, err := ssh.MarshalPrivateKey(priv, "clientele sftp host key")
	if err != nil {
		return fmt.Errorf("sftp: host key: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("sftp: host key: %w", err)
	}
	f, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("sftp: host key: %w", err)
	}
	defer os.Remove(f.Name())
	if err := errors.Join(f.Chmod(0o600), pem.Encode(f, block), f.Sync(), f.Close()); err != nil {
		return fmt.Errorf("sftp: host key: %w", err)
	}
	if err := os.Link(f.Name(), path); err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("sftp: host key: %w", err)
	}
	return syncDir(filepath.Dir(path))
}
