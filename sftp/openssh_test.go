package sftp_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/clientele/clientele/commands"
	"github.com/clientele/clientele/domain/access"
)

// TestSFTPOpenSSHClient drives the server with OpenSSH's sftp program in
// batch mode, logging in with a registered key and checking the host key
// against known_hosts: an upload, an upload under a temporary name
// renamed when done (posix-rename), a listing, and a refused escape.
func TestSFTPOpenSSHClient(t *testing.T) {
	bin, err := exec.LookPath("sftp")
	if err != nil {
		t.Skip("OpenSSH's sftp program is not installed (Debian package openssh-client)")
	}
	e := newEnv(t)
	dir := t.TempDir()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	block, err := ssh.MarshalPrivateKey(priv, "test")
	if err != nil {
		t.Fatal(err)
	}
	keyFile := filepath.Join(dir, "id_ed25519")
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(block), 0o600); err != nil {
		t.Fatal(err)
	}
	signer, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.cmds.AddSFTPKey.Handle(context.Background(), commands.AddSFTPKey{
		Principal: access.System(e.acme.ID), PublicKey: string(ssh.MarshalAuthorizedKey(signer.PublicKey())), Name: "openssh"}); err != nil {
		t.Fatal(err)
	}
	host, port, _ := net.SplitHostPort(e.addr)
	knownHosts := filepath.Join(dir, "known_hosts")
	line := fmt.Sprintf("[%s]:%s %s", host, port, ssh.MarshalAuthorizedKey(e.hostKey.PublicKey()))
	if err := os.WriteFile(knownHosts, []byte(line), 0o600); err != nil {
		t.Fatal(err)
	}
	local := filepath.Join(dir, "customers-openssh.csv")
	var b strings.Builder
	b.WriteString("customer_id;email\n")
	for i := range 5000 { // several write requests in flight
		fmt.Fprintf(&b, "C%d;c%d@x.test\n", i, i)
	}
	if err := os.WriteFile(local, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	batch := filepath.Join(dir, "batch")
	script := fmt.Sprintf("put %s toclientele/\nput %s toclientele/customers-2.csv.part\nrename toclientele/customers-2.csv.part toclientele/customers-2.csv\nls -l toclientele\n-get /etc/passwd %s\n",
		local, local, filepath.Join(dir, "stolen"))
	if err := os.WriteFile(batch, []byte(script), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "-b", batch, "-P", port, "-i", keyFile,
		"-o", "UserKnownHostsFile="+knownHosts, "-o", "StrictHostKeyChecking=yes", "-o", "BatchMode=yes",
		"-o", "IdentitiesOnly=yes", "-F", "/dev/null", "acme@"+host)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("sftp: %v\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(dir, "stolen")); err == nil {
		t.Error("got /etc/passwd")
	}
	c := e.mustDial()
	for _, n := range []string{"customers-openssh.csv", "customers-2.csv"} {
		if r := waitResult(t, c, n); r.State != "completed" || r.Accepted != 5000 {
			t.Errorf("%s: result %+v", n, r)
		}
	}
}

// TestSFTPNothingButSFTP: no shell, no exec, no other subsystem, no port
// forwarding.
func TestSFTPNothingButSFTP(t *testing.T) {
	e := newEnv(t)
	conn, err := ssh.Dial("tcp", e.addr, &ssh.ClientConfig{
		User: "acme", Auth: []ssh.AuthMethod{ssh.Password(e.adminToken)}, HostKeyCallback: ssh.FixedHostKey(e.hostKey.PublicKey()),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for name, try := range map[string]func(s *ssh.Session) error{
		"exec":      func(s *ssh.Session) error { return s.Run("cat /etc/passwd") },
		"shell":     func(s *ssh.Session) error { return s.Shell() },
		"subsystem": func(s *ssh.Session) error { return s.RequestSubsystem("netconf") },
	} {
		s, err := conn.NewSession()
		if err != nil {
			t.Fatal(err)
		}
		if err := try(s); err == nil {
			t.Errorf("%s was accepted", name)
		}
		s.Close()
	}
	if c, err := conn.Dial("tcp", "127.0.0.1:22"); err == nil {
		c.Close()
		t.Error("a direct-tcpip channel was accepted")
	}
	if _, err := conn.Listen("tcp", "127.0.0.1:0"); err == nil {
		t.Error("a tcpip-forward was accepted")
	}
}
