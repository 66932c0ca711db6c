package pg

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// A standby is a second embedded server that streams the primary's WAL
// and that the primary waits for at each commit (synchronous
// replication): a commit acknowledged to a client is on both, so that the
// standby, promoted when the primary is lost, holds every one. Clients
// reach whichever is the primary through a connection string naming both
// with target_session_attrs=read-write (MultiHostURL): a promoted standby
// is found at the next connection, with no restart.

// StartStandby makes a standby of e, which must be running, in opts.Dir
// (opts.SocketDir as for StartEmbedded; opts.Fast and opts.Database are
// e's): a base backup of e (pg_basebackup -R), started, and then named
// e's synchronous standby. It returns once e's commits wait for it.
func (e *Embedded) StartStandby(ctx context.Context, opts EmbeddedOptions) (*Embedded, error) {
	dir, err := filepath.Abs(opts.Dir)
	if err != nil {
		return nil, err
	}
	s := &Embedded{dir: dir, pgdata: filepath.Join(dir, "pg"), bin: e.bin, runAs: e.runAs, password: e.password, database: e.database}
	if err := os.MkdirAll(filepath.Join(dir, "clients"), 0o755); err != nil {
		return nil, fmt.Errorf("embedded postgres: standby: %w", err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		return nil, fmt.Errorf("embedded postgres: standby: %w", err)
	}
	if err := s.checkReachable(dir, "choose another directory"); err != nil {
		return nil, err
	}
	if opts.SocketDir != "" {
		if err := s.prepareSocketDir(opts.SocketDir); err != nil {
			return nil, err
		}
	}
	if err := os.MkdirAll(s.pgdata, 0o700); err != nil {
		return nil, fmt.Errorf("embedded postgres: standby: %w", err)
	}
	if err := s.chown(s.pgdata); err != nil {
		return nil, fmt.Errorf("embedded postgres: standby: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "password"), []byte(e.password+"\n"), 0o600); err != nil {
		return nil, err
	}
	host, port := e.hostPort()
	// -R writes primary_conninfo (with the password it connected with)
	// and standby.signal; the WAL of the backup is streamed alongside.
	if err := s.runWith(ctx, []string{"PGPASSWORD=" + e.password}, filepath.Join(e.bin, "pg_basebackup"),
		"-D", s.pgdata, "-h", host, "-p", port, "-U", embeddedUser, "-R", "-X", "stream", "-c", "fast"); err != nil {
		return nil, fmt.Errorf("embedded postgres: standby: %w", err)
	}
	if s.socketDir != "" {
		s.port = 5432
		err = s.start(ctx, s.port)
	} else {
		s.port, err = s.startOnFreePort(ctx)
	}
	if err != nil {
		return nil, fmt.Errorf("embedded postgres: start standby (log: %s): %w", s.logPath(), err)
	}
	s.started = true
	s.url = s.ServerURL(s.database)
	s.client = fmt.Sprintf("%d-%s", os.Getpid(), randomHex(6))
	if err := os.WriteFile(filepath.Join(dir, "clients", s.client), nil, 0o644); err != nil {
		return nil, err
	}
	// Named after the backup, so that the standby's own configuration
	// (copied from e's) waits for no standby once it is promoted.
	if err := e.syncWith(ctx, "*"); err != nil {
		return nil, err
	}
	return s, nil
}

// syncWith makes e wait at each commit for a standby of names
// (synchronous_standby_names), and returns once one streams in sync.
func (e *Embedded) syncWith(ctx context.Context, names string) error {
	conn, err := pgx.Connect(ctx, e.ServerURL("postgres"))
	if err != nil {
		return fmt.Errorf("embedded postgres: standby: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, `ALTER SYSTEM SET synchronous_standby_names = `+QuoteLiteral(names)); err != nil {
		return fmt.Errorf("embedded postgres: standby: %w", err)
	}
	if _, err := conn.Exec(ctx, `SELECT pg_reload_conf()`); err != nil {
		return fmt.Errorf("embedded postgres: standby: %w", err)
	}
	for {
		var n int
		if err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_stat_replication WHERE sync_state = 'sync'`).Scan(&n); err != nil {
			return fmt.Errorf("embedded postgres: standby: %w", err)
		}
		if n > 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("embedded postgres: no standby in sync: %w", ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Promote makes a standby the primary (pg_ctl promote) and returns once
// it accepts writes.
func (e *Embedded) Promote(ctx context.Context) error {
	if err := e.pgctl(ctx, "promote", "-w", "-t", "120"); err != nil {
		return fmt.Errorf("embedded postgres: promote: %w", err)
	}
	return nil
}

// MultiHostURL is a connection string of the database on servers, tried in
// order for one that accepts writes (target_session_attrs=read-write):
// whichever of a primary and its standbys is the primary now.
func MultiHostURL(servers ...*Embedded) string {
	hosts, ports := make([]string, len(servers)), make([]string, len(servers))
	for i, s := range servers {
		hosts[i], ports[i] = s.hostPort()
	}
	u := url.URL{Scheme: "postgres", User: url.UserPassword(embeddedUser, servers[0].password), Path: "/" + servers[0].database}
	u.RawQuery = url.Values{"host": {strings.Join(hosts, ",")}, "port": {strings.Join(ports, ",")},
		"sslmode": {"disable"}, "target_session_attrs": {"read-write"}}.Encode()
	return u.String()
}

// hostPort is where e listens: its socket directory, or 127.0.0.1.
func (e *Embedded) hostPort() (host, port string) {
	if e.socketDir != "" {
		return e.socketDir, strconv.Itoa(e.port)
	}
	return "127.0.0.1", strconv.Itoa(e.port)
}
