package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/clientele/clientele/internal/crypto"
	"github.com/clientele/clientele/internal/pg"
)

// The bootstrap of every run: a fresh database (freshDatabase), migrated,
// with a company and its admin per slug (prepare), a serve on it
// (startServer), and an access token per company (createTokenAs).

// The load company of most runs, and the password of every company's
// admin.
const (
	slug     = "load"
	host     = slug + ".localhost"
	email    = "load@load.test"
	password = "load-driver-password"
)

// account is a company's host and its admin user's email (password
// is the same for all).
type account struct{ host, email string }

// accountOf returns the account of the company prepare created as slug.
func accountOf(slug string) account {
	return account{slug + ".localhost", slug + "@load.test"}
}

// prepare starts a fresh database named after prefix (freshDatabase),
// migrates it, and creates a company per slug with its admin
// (accountOf(slug), password). env is added to the environment of the
// run's child processes, which prepare returns with the database's URL
// and the stop of freshDatabase.
func prepare(ctx context.Context, o options, prefix string, env []string, slugs ...string) (url string, childEnv []string, stop func(), err error) {
	url, childEnv, stop, err = freshDatabase(ctx, o, prefix)
	if err != nil {
		return "", nil, nil, err
	}
	childEnv = append(childEnv, env...)
	commands := [][]string{{"migrate"}}
	for _, s := range slugs {
		commands = append(commands,
			[]string{"company", "create", s},
			[]string{"user", "create", "--company", s, "--email", accountOf(s).email, "--password", password, "--role", "admin"})
	}
	for _, args := range commands {
		if _, err := runClientele(ctx, o.binary, url, childEnv, args...); err != nil {
			stop()
			return "", nil, nil, err
		}
	}
	return url, childEnv, stop, nil
}

// runClientele runs one command of the clientele binary on the database
// at url, and returns what it printed. Its error holds what the command
// logged.
func runClientele(ctx context.Context, binary, url string, env []string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, binary, append(args, "--database-url", url, "--log-level", "warn")...)
	cmd.Env = env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("clientele %s: %w\n%s%s", strings.Join(args, " "), err, stdout.Bytes(), stderr.Bytes())
	}
	return stdout.Bytes(), nil
}

// freshDatabase starts the embedded PostgreSQL in o.dir and creates a
// database named after prefix and the time, dropped by stop unless
// o.keep. It returns the database's URL and the environment of the run's
// child processes: one master key for all of them, so no key file is
// left behind and every child opens the others' sealed data.
func freshDatabase(ctx context.Context, o options, prefix string) (url string, childEnv []string, stop func(), err error) {
	emb, err := pg.StartEmbedded(ctx, pg.EmbeddedOptions{Dir: o.dir, Database: "postgres"})
	if err != nil {
		return "", nil, nil, err
	}
	admin, err := pgx.Connect(ctx, emb.URL())
	if err != nil {
		emb.Close()
		return "", nil, nil, err
	}
	dbName := fmt.Sprintf("%s_%d", prefix, time.Now().Unix())
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+dbName); err != nil {
		admin.Close(context.Background())
		emb.Close()
		return "", nil, nil, err
	}
	stop = func() {
		if !o.keep {
			admin.Exec(context.Background(), "DROP DATABASE IF EXISTS "+dbName+" WITH (FORCE)") //nolint:errcheck
		}
		admin.Close(context.Background())
		emb.Close()
	}
	childEnv = append(os.Environ(), "CLIENTELE_MASTER_KEY="+base64.StdEncoding.EncodeToString(crypto.NewMasterKey()))
	return emb.ServerURL(dbName), childEnv, stop, nil
}

type server struct {
	cmd  *exec.Cmd
	base string
	// sftpAddr is where the SFTP drop directory listens, when started
	// with extra arguments that serve it.
	sftpAddr string
}

// startServer starts serve with the extra arguments and waits until it
// says where it listens (and, with wantSFTP, where SFTP is served).
func startServer(ctx context.Context, binary, url string, env []string, wantSFTP bool, extra ...string) (*server, error) {
	args := append([]string{"serve", "--database-url", url, "--addr", "127.0.0.1:0",
		"--log-level", "warn", "--rate-limit", "1000000", "--rate-burst", "1000000"}, extra...)
	cmd := exec.CommandContext(ctx, binary, args...)
	cmd.Env = env
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	re := regexp.MustCompile(`listening on (http://\S+)`)
	reSFTP := regexp.MustCompile(`SFTP drop directory on (\S+)`)
	srv := &server{cmd: cmd}
	lines := bufio.NewScanner(stdout)
	for lines.Scan() {
		if m := re.FindStringSubmatch(lines.Text()); m != nil {
			srv.base = m[1]
		}
		if m := reSFTP.FindStringSubmatch(lines.Text()); m != nil {
			srv.sftpAddr = m[1]
		}
		if srv.base != "" && (srv.sftpAddr != "" || !wantSFTP) {
			go io.Copy(io.Discard, stdout) //nolint:errcheck
			return srv, nil
		}
	}
	_ = cmd.Wait()
	return nil, errors.New("serve exited before listening")
}

func (s *server) stop() {
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	_ = s.cmd.Wait()
}

// deployment is the bootstrap of a run of the load company alone: a
// prepared database, a serve on it, and the company's access token.
type deployment struct {
	url   string   // the database's
	env   []string // the child processes' environment
	srv   *server
	token string
	// dropDB is freshDatabase's stop.
	dropDB func()
}

// deploy prepares a database named after prefix for the load company
// (prepare, with env), starts a serve on it and creates the company's
// access token. close undoes it.
func deploy(ctx context.Context, o options, prefix string, env ...string) (*deployment, error) {
	url, childEnv, dropDB, err := prepare(ctx, o, prefix, env, slug)
	if err != nil {
		return nil, err
	}
	d := &deployment{url: url, env: childEnv, dropDB: dropDB}
	if d.srv, err = startServer(ctx, o.binary, url, childEnv, false); err != nil {
		dropDB()
		return nil, err
	}
	if d.token, err = createToken(d.srv.base); err != nil {
		d.close()
		return nil, err
	}
	return d, nil
}

// close stops the serve (if it still runs) and drops the database unless
// -keep.
func (d *deployment) close() {
	d.srv.stop()
	d.dropDB()
}
