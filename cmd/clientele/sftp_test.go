package main

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/pkg/sftp"
	"golang.org/x/crypto/ssh"

	"github.com/clientele/clientele/internal/pg/pgtest"
	"github.com/clientele/clientele/internal/testlog"
)

// sftpHelper marks the helper process of TestSFTPKilledServe: a real
// `serve` with the SFTP drop directory, in a process of its own that the
// test kills with SIGKILL.
const sftpHelper = "CLIENTELE_SFTP_HELPER_ARGS"

// TestSFTPServeHelper is not a test: it is the process the kill test runs.
func TestSFTPServeHelper(t *testing.T) {
	args := os.Getenv(sftpHelper)
	if args == "" {
		t.Skip("helper process of TestSFTPKilledServe")
	}
	err := run(context.Background(), strings.Split(args, "\x1f"), os.Stdout, os.Stderr, os.Getenv)
	t.Fatalf("serve returned: %v", err)
}

// sftpServe is a serve process.
type sftpServe struct {
	cmd  *exec.Cmd
	out  *testlog.Buffer
	addr string // the SFTP address
}

// startSFTPServe starts serve in a helper process with the environment
// vars and waits until it says where SFTP is served.
func startSFTPServe(t *testing.T, vars map[string]string, sftpAddr string) *sftpServe {
	t.Helper()
	args := []string{"serve", "--addr", "127.0.0.1:0", "--sftp-addr", sftpAddr, "--log-format", "text"}
	cmd := exec.Command(os.Args[0], "-test.run=^TestSFTPServeHelper$", "-test.v")
	cmd.Env = append(os.Environ(), sftpHelper+"="+strings.Join(args, "\x1f"))
	for k, v := range vars {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	s := &sftpServe{cmd: cmd, out: &testlog.Buffer{}}
	cmd.Stdout, cmd.Stderr = s.out, s.out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.kill() })
	re := regexp.MustCompile(`SFTP drop directory on (\S+) \(host key (SHA256:\S+)\)`)
	for deadline := time.Now().Add(90 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if m := re.FindStringSubmatch(s.out.String()); m != nil {
			s.addr = m[1]
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve did not start:\n%s", s.out.String())
		}
	}
}

// kill ends the process with SIGKILL: nothing of it runs after.
func (s *sftpServe) kill() {
	if s.cmd.ProcessState != nil {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGKILL)
	_ = s.cmd.Wait()
}

// TestSFTPKilledServe kills a real `serve` process with SIGKILL right
// after a complete upload, and again while it stages another, and
// starts it again: each file is imported exactly once, whole. It also
// registers the key with `company sftp-key add` and checks list and
// remove.
func TestSFTPKilledServe(t *testing.T) {
	if testing.Short() {
		t.Skip("starts serve processes")
	}
	dataDir := t.TempDir()
	url := pgtest.URL(t)
	vars := map[string]string{"DATABASE_URL": url, "CLIENTELE_DATA_DIR": dataDir, "CLIENTELE_LOG_LEVEL": "info"}
	getenv := env(vars)
	mustRun(t, getenv, "company", "create", "acme")

	// The key, registered with the CLI.
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	pubFile := filepath.Join(t.TempDir(), "id.pub")
	if err := os.WriteFile(pubFile, ssh.MarshalAuthorizedKey(signer.PublicKey()), 0o600); err != nil {
		t.Fatal(err)
	}
	out := mustRun(t, getenv, "company", "sftp-key", "add", "acme", pubFile, "--name", "erp")
	m := regexp.MustCompile(`sftp key (\w+)\n  name:        erp\n  fingerprint: (SHA256:\S+)`).FindStringSubmatch(out)
	if m == nil || m[2] != ssh.FingerprintSHA256(signer.PublicKey()) {
		t.Fatalf("sftp-key add printed %q", out)
	}
	keyID := m[1]
	if out := mustRun(t, getenv, "company", "sftp-key", "list", "acme"); !regexp.MustCompile(keyID + ` +erp +` + regexp.QuoteMeta(m[2])).MatchString(out) {
		t.Errorf("sftp-key list printed %q", out)
	}

	// Each start listens on a port of its own (port 0) and says which.
	const sftpAddr = "127.0.0.1:0"
	const records = 30000
	files := map[string][]byte{}
	for _, name := range []string{"customers-a.csv", "customers-b.csv"} {
		var b bytes.Buffer
		b.WriteString("customer_id,email,first_name\n")
		for i := range records {
			fmt.Fprintf(&b, "%s-%d,%s-%d@x.test,Name %d\n", name[:11], i, name[:11], i, i)
		}
		files[name] = b.Bytes()
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	runsOf := func() (n int) {
		if err := conn.QueryRow(ctx, `SELECT count(*) FROM import_runs`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}

	// Killed right after the upload's close returned.
	s := startSFTPServe(t, vars, sftpAddr)
	upload(t, s.addr, signer, "customers-a.csv", files["customers-a.csv"])
	s.kill()
	// Killed while staging.
	s = startSFTPServe(t, vars, sftpAddr)
	upload(t, s.addr, signer, "customers-b.csv", files["customers-b.csv"])
	for deadline := time.Now().Add(60 * time.Second); runsOf() == 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no run was created")
		}
	}
	s.kill()

	s = startSFTPServe(t, vars, sftpAddr)
	c := dialSFTP(t, s.addr, signer)
	for name, data := range files {
		var r struct {
			RunID    string `json:"run_id"`
			State    string `json:"state"`
			Received int    `json:"received"`
			Accepted int    `json:"accepted"`
		}
		for deadline := time.Now().Add(120 * time.Second); r.State != "completed"; time.Sleep(50 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s was not imported: %+v\n%s", name, r, s.out.String())
			}
			f, err := c.Open("toclientele/processed/" + name + ".result.json")
			if err != nil {
				continue
			}
			b, _ := io.ReadAll(f)
			f.Close()
			_ = json.Unmarshal(b, &r)
		}
		if r.Received != records || r.Accepted != records {
			t.Errorf("%s: %+v", name, r)
		}
		f, err := c.Open("toclientele/processed/" + name)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(f)
		f.Close()
		if !bytes.Equal(got, data) {
			t.Errorf("processed/%s differs from what was sent", name)
		}
	}
	var runs, sources int
	if err := conn.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE source = 'sftp') FROM import_runs WHERE state <> 'receiving'`).Scan(&runs, &sources); err != nil {
		t.Fatal(err)
	}
	if runs != 2 || sources != 2 {
		t.Errorf("%d runs (%d from sftp), want 2", runs, sources)
	}
	var customers int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM events WHERE event_type = 'CustomerUpserted'`).Scan(&customers); err != nil {
		t.Fatal(err)
	}
	if customers != 2*records {
		t.Errorf("%d customers imported, want %d", customers, 2*records)
	}

	// Removed, the key no longer logs in.
	mustRun(t, getenv, "company", "sftp-key", "remove", "acme", keyID)
	if _, err := ssh.Dial("tcp", s.addr, sshConfig(signer)); err == nil {
		t.Error("a removed key logged in")
	}
	if out := mustRun(t, getenv, "company", "sftp-key", "list", "acme"); strings.Contains(out, keyID) {
		t.Errorf("sftp-key list after remove printed %q", out)
	}
}

func sshConfig(signer ssh.Signer) *ssh.ClientConfig {
	return &ssh.ClientConfig{User: "acme", Auth: []ssh.AuthMethod{ssh.PublicKeys(signer)},
		HostKeyCallback: ssh.InsecureIgnoreHostKey(), Timeout: 10 * time.Second}
}

func dialSFTP(t *testing.T, addr string, signer ssh.Signer) *sftp.Client {
	t.Helper()
	conn, err := ssh.Dial("tcp", addr, sshConfig(signer))
	if err != nil {
		t.Fatal(err)
	}
	c, err := sftp.NewClient(conn, sftp.UseConcurrentWrites(true))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(); conn.Close() })
	return c
}

// upload sends a file and returns once its close was answered.
func upload(t *testing.T, addr string, signer ssh.Signer, name string, data []byte) {
	t.Helper()
	c := dialSFTP(t, addr, signer)
	f, err := c.Create("toclientele/" + name)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.ReadFrom(bytes.NewReader(data)); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}
