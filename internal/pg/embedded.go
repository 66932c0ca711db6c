package pg

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// EmbeddedOptions configures an embedded server.
type EmbeddedOptions struct {
	// Dir holds the cluster (Dir/pg), its password and the list of
	// processes using it. Created when missing.
	Dir string
	// Fast turns durability off (fsync, synchronous_commit,
	// full_page_writes). For test clusters only; applied when the cluster
	// is created.
	Fast bool
	// Database is the database to create and connect to; default "clientele".
	Database string
}

// Embedded is a private PostgreSQL cluster run from the machine's own
// binaries. Several processes may share one data directory: the first
// starts the server, the others attach to it, and the last to close stops
// it.
type Embedded struct {
	dir     string
	pgdata  string
	bin     string
	url     string
	runAs   *syscall.Credential
	started bool
	// client names this attachment in Dir/clients: "<pid>-<random>", so
	// that two attachments of one process count twice.
	client string
}

// ErrNoPostgres reports that no PostgreSQL server binaries were found.
var ErrNoPostgres = errors.New("PostgreSQL server binaries (initdb, pg_ctl, postgres) not found on PATH or under /usr/lib/postgresql/*/bin: install them (Debian/Ubuntu: apt-get install postgresql) or pass --database-url")

const embeddedUser = "clientele"

// StartEmbedded starts the cluster in opts.Dir, or attaches to it when
// another process already runs it, and returns once it accepts connections.
func StartEmbedded(ctx context.Context, opts EmbeddedOptions) (*Embedded, error) {
	if opts.Database == "" {
		opts.Database = "clientele"
	}
	dir, err := filepath.Abs(opts.Dir)
	if err != nil {
		return nil, err
	}
	bin, err := findPostgresBin()
	if err != nil {
		return nil, err
	}
	e := &Embedded{dir: dir, pgdata: filepath.Join(dir, "pg"), bin: bin}
	if e.runAs, err = unprivilegedUser(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Join(dir, "clients"), 0o755); err != nil {
		return nil, fmt.Errorf("embedded postgres: %w", err)
	}
	// Other users must reach the cluster directory when the server runs as
	// an unprivileged user.
	if err := os.Chmod(dir, 0o755); err != nil {
		return nil, fmt.Errorf("embedded postgres: %w", err)
	}
	if err := e.checkReachable(); err != nil {
		return nil, err
	}
	unlock, err := lockFile(filepath.Join(dir, "embedded.lock"))
	if err != nil {
		return nil, err
	}
	defer unlock()

	password, err := e.ensureCluster(ctx, opts.Fast)
	if err != nil {
		return nil, err
	}
	port, running := e.runningPort()
	if !running {
		if port, err = freePort(); err != nil {
			return nil, err
		}
		if err := e.pgctl(ctx, "start", "-w", "-t", "120", "-l", filepath.Join(e.pgdata, "server.log"), "-o", "-p "+strconv.Itoa(port)); err != nil {
			return nil, fmt.Errorf("embedded postgres: start (log: %s): %w", filepath.Join(e.pgdata, "server.log"), err)
		}
		e.started = true
	}
	base := fmt.Sprintf("postgres://%s:%s@127.0.0.1:%d/", embeddedUser, password, port)
	if err := createDatabase(ctx, base+"postgres?sslmode=disable", opts.Database); err != nil {
		return nil, err
	}
	e.url = base + opts.Database + "?sslmode=disable"
	e.client = fmt.Sprintf("%d-%s", os.Getpid(), randomHex(6))
	if err := os.WriteFile(filepath.Join(dir, "clients", e.client), nil, 0o644); err != nil {
		return nil, err
	}
	return e, nil
}

// URL is the connection string of the embedded database.
func (e *Embedded) URL() string { return e.url }

// ServerURL returns the connection string of another database on the
// same server.
func (e *Embedded) ServerURL(database string) string {
	i := strings.LastIndex(e.url, "/")
	return e.url[:i+1] + database + "?sslmode=disable"
}

// Close detaches this process; the last process to detach stops the server.
func (e *Embedded) Close() error {
	unlock, err := lockFile(filepath.Join(e.dir, "embedded.lock"))
	if err != nil {
		return err
	}
	defer unlock()
	clients := filepath.Join(e.dir, "clients")
	_ = os.Remove(filepath.Join(clients, e.client))
	entries, _ := os.ReadDir(clients)
	for _, ent := range entries {
		pidPart, _, _ := strings.Cut(ent.Name(), "-")
		pid, err := strconv.Atoi(pidPart)
		if err == nil && processAlive(pid) {
			return nil // someone still uses the server
		}
		_ = os.Remove(filepath.Join(clients, ent.Name()))
	}
	if _, running := e.runningPort(); !running {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	return e.pgctl(ctx, "stop", "-w", "-m", "fast")
}

func (e *Embedded) ensureCluster(ctx context.Context, fast bool) (string, error) {
	pwPath := filepath.Join(e.dir, "password")
	if _, err := os.Stat(filepath.Join(e.pgdata, "PG_VERSION")); err == nil {
		b, err := os.ReadFile(pwPath)
		if err != nil {
			return "", fmt.Errorf("embedded postgres: read password: %w", err)
		}
		return strings.TrimSpace(string(b)), nil
	}
	// A half-made cluster (a crash during initdb) is made again.
	if err := os.RemoveAll(e.pgdata); err != nil {
		return "", err
	}
	if err := os.MkdirAll(e.pgdata, 0o700); err != nil {
		return "", err
	}
	if err := e.chown(e.pgdata); err != nil {
		return "", err
	}
	password := randomHex(18)
	if err := os.WriteFile(pwPath, []byte(password+"\n"), 0o600); err != nil {
		return "", err
	}
	pwFile := filepath.Join(e.dir, "initdb.pw")
	if err := os.WriteFile(pwFile, []byte(password+"\n"), 0o644); err != nil {
		return "", err
	}
	defer os.Remove(pwFile)
	if err := e.run(ctx, filepath.Join(e.bin, "initdb"), "-D", e.pgdata, "-U", embeddedUser,
		"--pwfile="+pwFile, "--auth=scram-sha-256", "-E", "UTF8", "--no-locale", "--no-instructions"); err != nil {
		return "", fmt.Errorf("embedded postgres: initdb: %w", err)
	}
	conf := []string{
		"listen_addresses = '127.0.0.1'",
		"unix_socket_directories = ''",
		"max_connections = 200",
		"shared_buffers = 256MB",
		"max_wal_size = 4GB",
		"logging_collector = off",
	}
	if fast {
		conf = append(conf, "fsync = off", "synchronous_commit = off", "full_page_writes = off")
	}
	f, err := os.OpenFile(filepath.Join(e.pgdata, "postgresql.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return "", err
	}
	defer f.Close()
	if _, err := f.WriteString("\n# clientele embedded server\n" + strings.Join(conf, "\n") + "\n"); err != nil {
		return "", err
	}
	return password, nil
}

// runningPort reads postmaster.pid and reports the port of a live server.
func (e *Embedded) runningPort() (int, bool) {
	b, err := os.ReadFile(filepath.Join(e.pgdata, "postmaster.pid"))
	if err != nil {
		return 0, false
	}
	lines := strings.Split(string(b), "\n")
	if len(lines) < 4 {
		return 0, false
	}
	pid, err1 := strconv.Atoi(strings.TrimSpace(lines[0]))
	port, err2 := strconv.Atoi(strings.TrimSpace(lines[3]))
	if err1 != nil || err2 != nil || !processAlive(pid) {
		return 0, false
	}
	return port, true
}

func (e *Embedded) pgctl(ctx context.Context, args ...string) error {
	return e.run(ctx, filepath.Join(e.bin, "pg_ctl"), append([]string{"-D", e.pgdata}, args...)...)
}

func (e *Embedded) run(ctx context.Context, name string, args ...string) error {
	cmd := exec.CommandContext(ctx, name, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.Dir = e.pgdata
	cmd.Env = []string{"LC_ALL=C", "PATH=" + e.bin + ":/usr/bin:/bin"}
	// Its own process group: a Ctrl-C in the terminal reaches us, and we
	// stop the server cleanly, rather than killing it mid-write.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Credential: e.runAs}
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s %s: %w\n%s", filepath.Base(name), args[0], err, strings.TrimSpace(out.String()))
	}
	return nil
}

// checkReachable fails clearly when the unprivileged server user could not
// reach the data directory (a parent directory closed to others, such as
// one made by os.MkdirTemp).
func (e *Embedded) checkReachable() error {
	if e.runAs == nil {
		return nil
	}
	for d := e.dir; ; d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		if err != nil {
			return err
		}
		st, ok := fi.Sys().(*syscall.Stat_t)
		if ok && st.Uid != e.runAs.Uid && fi.Mode().Perm()&0o001 == 0 {
			return fmt.Errorf("embedded postgres: the server runs as uid %d (PostgreSQL refuses root), which cannot enter %s: allow it (chmod o+x %s) or choose another --data-dir", e.runAs.Uid, d, d)
		}
		if d == filepath.Dir(d) {
			return nil
		}
	}
}

func (e *Embedded) chown(path string) error {
	if e.runAs == nil {
		return nil
	}
	return os.Chown(path, int(e.runAs.Uid), int(e.runAs.Gid))
}
