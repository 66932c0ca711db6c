package pg

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
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
	// SocketDir, when set, makes the server listen on a Unix socket in
	// this directory only, never on TCP, and the URL connect through it
	// (host=SocketDir). A directory of the caller alone gives the server
	// an address no other process can take while it is down, as TCP ports
	// can be taken between a crash and a restart. Created when missing and
	// handed to the server's user. The socket's path must fit in 107
	// bytes, so keep the directory short (such as /tmp/<short name>). All
	// users of one Dir must pass the same SocketDir.
	SocketDir string
}

// Embedded is a private PostgreSQL cluster run from the machine's own
// binaries. Several processes may share one data directory: the first
// starts the server, the others attach to it, and the last to close stops
// it.
type Embedded struct {
	dir      string
	pgdata   string
	bin      string
	url      string
	password string
	database string
	port     int
	// socketDir is the directory of the server's only (Unix) socket, or
	// "" when it listens on TCP, 127.0.0.1.
	socketDir string
	runAs     *syscall.Credential
	started   bool
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
	if err := e.checkReachable(dir, "choose another --data-dir"); err != nil {
		return nil, err
	}
	if opts.SocketDir != "" {
		if err := e.prepareSocketDir(opts.SocketDir); err != nil {
			return nil, err
		}
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
		if e.socketDir != "" {
			port = 5432 // the socket's name only: the directory is the caller's own
			err = e.start(ctx, port)
		} else {
			port, err = e.startOnFreePort(ctx)
		}
		if err != nil {
			return nil, fmt.Errorf("embedded postgres: start (log: %s): %w", e.logPath(), err)
		}
		e.started = true
	}
	e.password, e.port = password, port
	if err := createDatabase(ctx, e.ServerURL("postgres"), opts.Database); err != nil {
		return nil, err
	}
	e.database, e.url = opts.Database, e.ServerURL(opts.Database)
	e.client = fmt.Sprintf("%d-%s", os.Getpid(), randomHex(6))
	if err := os.WriteFile(filepath.Join(dir, "clients", e.client), nil, 0o644); err != nil {
		return nil, err
	}
	return e, nil
}

// pickPort chooses the TCP port of a server to start: one free a moment
// ago (PostgreSQL cannot be given port 0). Tests replace it.
var pickPort = freePort

// startOnFreePort starts the server on a port pickPort chose. Another
// process may take that port before the server binds it; the server then
// fails saying the address is in use, and another port is tried.
func (e *Embedded) startOnFreePort(ctx context.Context) (int, error) {
	const attempts = 5
	for attempt := 1; ; attempt++ {
		port, err := pickPort()
		if err != nil {
			return 0, err
		}
		logged := fileSize(e.logPath())
		err = e.start(ctx, port)
		if err == nil || attempt == attempts || !e.loggedSince(logged, "Address already in use") {
			return port, err
		}
	}
}

func (e *Embedded) logPath() string { return filepath.Join(e.pgdata, "server.log") }

// loggedSince reports whether the server's log says text after its first
// offset bytes.
func (e *Embedded) loggedSince(offset int64, text string) bool {
	f, err := os.Open(e.logPath())
	if err != nil {
		return false
	}
	defer f.Close()
	b, err := io.ReadAll(io.NewSectionReader(f, offset, 1<<20))
	return err == nil && bytes.Contains(b, []byte(text))
}

// fileSize is the size of the file at path, 0 when there is none.
func fileSize(path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return fi.Size()
}

// start starts the server on port (TCP on 127.0.0.1, or the socket
// name in socketDir) and returns once it accepts connections.
func (e *Embedded) start(ctx context.Context, port int) error {
	// The EventStoreDB event store prepares its commits' transactions
	// (esdb.Coupled); given at each start, so that a data directory made
	// before has it too.
	opts := "-p " + strconv.Itoa(port) + " -c max_prepared_transactions=200"
	if e.socketDir != "" {
		// pg_ctl hands the options to the server through sh -c:
		// prepareSocketDir allowed no character the quotes would not keep.
		opts += " -c listen_addresses='' -c unix_socket_directories='" + e.socketDir + "'"
	}
	return e.pgctl(ctx, "start", "-w", "-t", "120", "-l", e.logPath(), "-o", opts)
}

// socketPathMax is the longest path of a Unix socket (sun_path less its
// terminating NUL), which PostgreSQL refuses to exceed.
const socketPathMax = 107

// prepareSocketDir makes dir the directory of the server's only socket:
// created, and writable by the server's user.
func (e *Embedded) prepareSocketDir(dir string) error {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	for _, r := range dir {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("/._-", r)) {
			return fmt.Errorf("embedded postgres: socket directory %q: only letters, digits and /._- are allowed", dir)
		}
	}
	if sock := filepath.Join(dir, ".s.PGSQL.5432"); len(sock) > socketPathMax {
		return fmt.Errorf("embedded postgres: socket directory %s: the socket path %s is longer than %d bytes", dir, sock, socketPathMax)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("embedded postgres: %w", err)
	}
	if err := e.chown(dir); err != nil {
		return fmt.Errorf("embedded postgres: %w", err)
	}
	// The server's user writes the socket there; the client enters it.
	if err := os.Chmod(dir, 0o755); err != nil {
		return fmt.Errorf("embedded postgres: %w", err)
	}
	if err := e.checkReachable(dir, "choose another socket directory"); err != nil {
		return err
	}
	e.socketDir = dir
	return nil
}

// URL is the connection string of the embedded database.
func (e *Embedded) URL() string { return e.url }

// ServerURL returns the connection string of a database on the same
// server: over TCP to 127.0.0.1, or through the socket in the socket
// directory (host=<dir>).
func (e *Embedded) ServerURL(database string) string {
	u := url.URL{Scheme: "postgres", User: url.UserPassword(embeddedUser, e.password), Path: "/" + database}
	q := url.Values{"sslmode": {"disable"}}
	if e.socketDir != "" {
		q.Set("host", e.socketDir)
		q.Set("port", strconv.Itoa(e.port))
	} else {
		u.Host = "127.0.0.1:" + strconv.Itoa(e.port)
	}
	u.RawQuery = q.Encode()
	return u.String()
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

// pgctl runs pg_ctl's command args[0] on the cluster, in the documented
// order (pg_ctl start -D dir ...), so that an error names the command.
func (e *Embedded) pgctl(ctx context.Context, args ...string) error {
	return e.run(ctx, filepath.Join(e.bin, "pg_ctl"), append([]string{args[0], "-D", e.pgdata}, args[1:]...)...)
}

func (e *Embedded) run(ctx context.Context, name string, args ...string) error {
	return e.runWith(ctx, nil, name, args...)
}

// runWith runs a program of the server's as its user, with env added to
// the environment.
func (e *Embedded) runWith(ctx context.Context, env []string, name string, args ...string) error {
	cmd := exec.CommandContext(ctx, name, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.Dir = e.pgdata
	cmd.Env = append([]string{"LC_ALL=C", "PATH=" + e.bin + ":/usr/bin:/bin"}, env...)
	// Its own process group: a Ctrl-C in the terminal reaches us, and we
	// stop the server cleanly, rather than killing it mid-write.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Credential: e.runAs}
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s %s: %w\n%s", filepath.Base(name), args[0], err, strings.TrimSpace(out.String()))
	}
	return nil
}

// checkReachable fails clearly when the unprivileged server user could not
// reach dir (a parent directory closed to others, such as one made by
// os.MkdirTemp); hint says what else the user may do.
func (e *Embedded) checkReachable(dir, hint string) error {
	if e.runAs == nil {
		return nil
	}
	for d := dir; ; d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		if err != nil {
			return err
		}
		st, ok := fi.Sys().(*syscall.Stat_t)
		if ok && st.Uid != e.runAs.Uid && fi.Mode().Perm()&0o001 == 0 {
			return fmt.Errorf("embedded postgres: the server runs as uid %d (PostgreSQL refuses root), which cannot enter %s: allow it (chmod o+x %s) or %s", e.runAs.Uid, d, d, hint)
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
