package sftp_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/clientele/clientele/commands"
	"github.com/clientele/clientele/commands/imports"
	"github.com/clientele/clientele/domain/access"
	"github.com/clientele/clientele/sftp"
)

// TestSFTPRevokedTokenEndsSession: an OpenSSH session logged in with a
// token that is then revoked (DELETE /api/access-tokens/<id>/) is
// closed at its next request, and the file it tries to put after the
// revocation (a forget of a customer the first file created) is not
// imported. The recheck interval is an hour here: what ends the session
// is the check at the effect, not the periodic one.
func TestSFTPRevokedTokenEndsSession(t *testing.T) {
	e := newEnv(t, with(func(c *sftp.Config) { c.RecheckInterval = time.Hour }))
	tok, value := e.adminUserToken("ops@acme.test")
	s := e.openSSH(t, passwordAuth(value))
	s.put("customers-before.csv", "customer_id,email\nC1,c1@x.test\n")
	c := e.mustDial()
	if r := waitResult(t, c, "customers-before.csv"); r.Accepted != 1 {
		t.Fatalf("before the revocation: %+v", r)
	}

	e.apiDelete(t, "/api/access-tokens/"+tok.ID+"/")
	s.put("customers-forget.csv", "customer_id,is_forgotten\nC1,true\n")
	s.waitClosed()
	if out := s.output(); !strings.Contains(out, "Permission denied") {
		t.Errorf("the put after the revocation was not refused before the session closed:\n%s", out)
	}

	e.nothingImportedOf(c, "customers-forget.csv", 1)
}

// TestSFTPRevokedTokenClosesIdleSession: a session that does nothing
// after its token is revoked is closed within Config.RecheckInterval
// (the default, 2 s), with no request of its own.
func TestSFTPRevokedTokenClosesIdleSession(t *testing.T) {
	e := newEnv(t)
	tok, value := e.adminUserToken("ops@acme.test")
	s := e.openSSH(t, passwordAuth(value))
	s.put("customers-before.csv", "customer_id,email\nC1,c1@x.test\n")
	waitResult(t, e.mustDial(), "customers-before.csv")

	e.apiDelete(t, "/api/access-tokens/"+tok.ID+"/")
	revokedAt := time.Now()
	s.waitClosed()
	took := time.Since(revokedAt)
	t.Logf("session closed %v after the revocation", took.Round(time.Millisecond))
	if took > 10*time.Second {
		t.Errorf("the session was closed %v after the revocation; the bound is seconds", took)
	}
}

// TestSFTPRemovedKeyEndsSession: the same for a session logged in with a
// key that is then removed (DELETE /api/sftp-keys/<id>/).
func TestSFTPRemovedKeyEndsSession(t *testing.T) {
	e := newEnv(t, with(func(c *sftp.Config) { c.RecheckInterval = time.Hour }))
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	line := string(ssh.MarshalAuthorizedKey(signer.PublicKey()))
	k, err := e.cmds.AddSFTPKey.Handle(context.Background(), commands.AddSFTPKey{
		Principal: access.System(e.acme.ID), PublicKey: line, Name: "openssh"})
	if err != nil {
		t.Fatal(err)
	}
	s := e.openSSH(t, keyAuth(t, priv))
	s.put("customers-before.csv", "customer_id,email\nC1,c1@x.test\n")
	c := e.mustDial()
	if r := waitResult(t, c, "customers-before.csv"); r.Accepted != 1 {
		t.Fatalf("before the removal: %+v", r)
	}

	e.apiDelete(t, "/api/sftp-keys/"+k.ID+"/")
	s.put("customers-after.csv", "customer_id,email\nC2,c2@x.test\n")
	s.waitClosed()
	if out := s.output(); !strings.Contains(out, "Permission denied") {
		t.Errorf("the put after the removal was not refused before the session closed:\n%s", out)
	}

	e.nothingImportedOf(c, "customers-after.csv", 1)
	// The key logs in no more.
	if _, err := e.dialWith("acme", ssh.PublicKeys(signer)); err == nil {
		t.Error("a removed key logged in")
	}
}

// TestSFTPQueuedFileOfRevokedTokenNotImported: a file received while its
// token was valid, but whose import had not begun when the token was
// revoked, is not imported: it goes to failed/ saying why. The file
// whose staging had begun is imported.
func TestSFTPQueuedFileOfRevokedTokenNotImported(t *testing.T) {
	held := &heldUploads{entered: make(chan struct{}, 1), release: make(chan struct{})}
	e := newEnv(t, with(func(c *sftp.Config) {
		held.Uploads = c.Uploads
		c.Uploads = held
	}))
	tok, value := e.adminUserToken("ops@acme.test")
	c, err := e.dial("acme", value)
	if err != nil {
		t.Fatal(err)
	}
	put(t, c, "toclientele/customers-1.csv", []byte("customer_id,email\nC1,c1@x.test\n"))
	<-held.entered // customers-1 is being staged, and holds acme's queue
	put(t, c, "toclientele/customers-2.csv", []byte("customer_id,is_forgotten\nC1,true\n"))

	e.apiDelete(t, "/api/access-tokens/"+tok.ID+"/")
	close(held.release)

	admin := e.mustDial()
	if r := waitResult(t, admin, "customers-1.csv"); r.Accepted != 1 {
		t.Errorf("the file staged before the revocation: %+v", r)
	}
	text := waitFailed(t, admin, "customers-2.csv")
	if !strings.Contains(text, "revoked") || !strings.Contains(text, "nothing of it was imported") {
		t.Errorf("error text:\n%s", text)
	}
	if runs := e.runs(e.acme.ID); len(runs) != 1 {
		t.Errorf("runs: %+v, want the first file's alone", runs)
	}
}

// heldUploads holds the first staging until release is closed.
type heldUploads struct {
	sftp.Uploads
	entered chan struct{}
	release chan struct{}
	once    sync.Once
}

func (h *heldUploads) Handle(ctx context.Context, cmd imports.StageUpload) (imports.StagedUpload, error) {
	h.once.Do(func() {
		h.entered <- struct{}{}
		<-h.release
	})
	return h.Uploads.Handle(ctx, cmd)
}

// adminUserToken creates an admin user of acme and a token of theirs.
func (e *env) adminUserToken(email string) (access.AccessToken, string) {
	e.t.Helper()
	ctx := context.Background()
	u, err := e.cmds.CreateUser.Handle(ctx, commands.CreateUser{Principal: access.System(e.acme.ID), Email: email,
		Password: "correct horse battery", Roles: []access.Role{access.RoleAdmin}})
	if err != nil {
		e.t.Fatal(err)
	}
	tok, value, err := e.cmds.CreateAccessToken.Handle(ctx, commands.CreateAccessToken{
		Principal: access.Principal{CompanyID: e.acme.ID, UserID: u.User.ID, Roles: []access.Role{access.RoleAdmin}}})
	if err != nil {
		e.t.Fatal(err)
	}
	return tok, value
}

// apiDelete calls DELETE path on acme's API as its admin, and wants 2xx.
func (e *env) apiDelete(t *testing.T, path string) {
	t.Helper()
	req := httptest.NewRequest(http.MethodDelete, "http://acme.localhost"+path, nil)
	req.Header.Set("Authorization", "Bearer "+e.adminToken)
	w := httptest.NewRecorder()
	e.api.ServeHTTP(w, req)
	if w.Code/100 != 2 {
		t.Fatalf("DELETE %s: %d %s", path, w.Code, w.Body)
	}
}

// nothingImportedOf checks that name is nowhere in acme's tree (not held,
// queued, processed or failed) and that acme has runs import runs.
func (e *env) nothingImportedOf(c interface {
	Stat(string) (os.FileInfo, error)
}, name string, runs int) {
	e.t.Helper()
	for _, p := range []string{"toclientele/", "toclientele/processed/", "toclientele/failed/"} {
		if _, err := c.Stat(p + name); err == nil {
			e.t.Errorf("%s%s exists", p, name)
		}
	}
	if got := e.runs(e.acme.ID); len(got) != runs {
		e.t.Errorf("runs: %+v, want %d", got, runs)
	}
}

// opensshSession is OpenSSH's sftp program in interactive mode, its
// commands written to its input one at a time, as a person types them.
type opensshSession struct {
	t      *testing.T
	dir    string
	stdin  io.WriteCloser
	out    *syncBuffer
	exited chan struct{}
}

// openSSH logs in to acme with OpenSSH's sftp (auth are its options and
// environment) and waits until the session is open.
func (e *env) openSSH(t *testing.T, auth func(dir string) (args, env []string)) *opensshSession {
	t.Helper()
	bin, err := exec.LookPath("sftp")
	if err != nil {
		t.Skip("OpenSSH's sftp program is not installed (Debian package openssh-client)")
	}
	dir := t.TempDir()
	host, port, _ := net.SplitHostPort(e.addr)
	knownHosts := filepath.Join(dir, "known_hosts")
	line := fmt.Sprintf("[%s]:%s %s", host, port, ssh.MarshalAuthorizedKey(e.hostKey.PublicKey()))
	if err := os.WriteFile(knownHosts, []byte(line), 0o600); err != nil {
		t.Fatal(err)
	}
	args, env := auth(dir)
	args = append([]string{"-P", port, "-o", "UserKnownHostsFile=" + knownHosts, "-o", "StrictHostKeyChecking=yes",
		"-F", "/dev/null"}, args...)
	cmd := exec.Command(bin, append(args, "acme@"+host)...)
	cmd.Env = append(os.Environ(), env...)
	s := &opensshSession{t: t, dir: dir, out: &syncBuffer{}, exited: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = s.out, s.out
	if s.stdin, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		_ = cmd.Wait()
		close(s.exited)
	}()
	t.Cleanup(func() {
		s.stdin.Close()
		select {
		case <-s.exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-s.exited
		}
	})
	s.send("pwd")
	s.waitOutput("Remote working directory")
	return s
}

// passwordAuth logs in with the token as password, given by an askpass
// program as a person would type it.
func passwordAuth(token string) func(dir string) (args, env []string) {
	return func(dir string) ([]string, []string) {
		tokenFile := filepath.Join(dir, "token")
		askpass := filepath.Join(dir, "askpass")
		_ = os.WriteFile(tokenFile, []byte(token+"\n"), 0o600)
		_ = os.WriteFile(askpass, []byte("#!/bin/sh\ncat "+tokenFile+"\n"), 0o700)
		return []string{"-o", "PreferredAuthentications=password", "-o", "PubkeyAuthentication=no",
				"-o", "NumberOfPasswordPrompts=1"},
			[]string{"SSH_ASKPASS=" + askpass, "SSH_ASKPASS_REQUIRE=force", "DISPLAY=none"}
	}
}

// keyAuth logs in with the key priv.
func keyAuth(t *testing.T, priv ed25519.PrivateKey) func(dir string) (args, env []string) {
	return func(dir string) ([]string, []string) {
		keyFile := filepath.Join(dir, "id_ed25519")
		block, err := ssh.MarshalPrivateKey(priv, "test")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(keyFile, pem.EncodeToMemory(block), 0o600); err != nil {
			t.Fatal(err)
		}
		return []string{"-i", keyFile, "-o", "IdentitiesOnly=yes", "-o", "BatchMode=yes"}, nil
	}
}

// send writes one command line.
func (s *opensshSession) send(line string) {
	s.t.Helper()
	if _, err := io.WriteString(s.stdin, line+"\n"); err != nil {
		s.t.Logf("sftp's input: %v", err)
	}
}

// put writes a local file with content and puts it into toclientele/.
func (s *opensshSession) put(name, content string) {
	s.t.Helper()
	local := filepath.Join(s.dir, name)
	if err := os.WriteFile(local, []byte(content), 0o600); err != nil {
		s.t.Fatal(err)
	}
	s.send("put " + local + " toclientele/")
}

// waitOutput waits until the program's output holds want.
func (s *opensshSession) waitOutput(want string) {
	s.t.Helper()
	waitFor(s.t, fmt.Sprintf("%q from sftp", want), func() bool {
		select {
		case <-s.exited:
			s.t.Fatalf("sftp exited before saying %q:\n%s", want, s.output())
		default:
		}
		return strings.Contains(s.output(), want)
	})
}

// waitClosed waits until ssh says the server closed the connection (the
// program's input is still open: nothing else ends it).
func (s *opensshSession) waitClosed() {
	s.t.Helper()
	waitFor(s.t, "the server to close the session", func() bool {
		return strings.Contains(s.output(), "closed by remote host")
	})
}

func (s *opensshSession) output() string { return s.out.String() }

// syncBuffer is a bytes.Buffer that a process writes while a test reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
