package sftp_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"golang.org/x/crypto/ssh"

	"github.com/clientele/clientele/commands"
	"github.com/clientele/clientele/domain/access"
	"github.com/clientele/clientele/sftp"
)

// TestSFTPLogIn: the company's slug and one of its tokens log in; another
// company's token, a wrong token, an unknown slug, an unregistered or
// removed key do not, and each failure is logged; a registered key logs
// in until it is removed.
func TestSFTPLogIn(t *testing.T) {
	e := newEnv(t)
	if _, err := e.dial("globex", e.adminToken); err == nil {
		t.Error("acme's token logged in to globex")
	}
	if _, err := e.dial("acme", e.globexToken); err == nil {
		t.Error("globex's token logged in to acme")
	}
	if _, err := e.dial("acme", "not-a-token"); err == nil {
		t.Error("a wrong token logged in")
	}
	if _, err := e.dial("nosuch", e.adminToken); err == nil {
		t.Error("an unknown company logged in")
	}
	if !strings.Contains(e.logs.String(), `"msg":"sftp: log-in failed"`) {
		t.Error("failed log-ins are not logged")
	}

	signer, line := newKey(t, "erp@acme")
	if _, err := e.dialWith("acme", ssh.PublicKeys(signer)); err == nil {
		t.Fatal("an unregistered key logged in")
	}
	admin := access.System(e.acme.ID)
	k, err := e.cmds.AddSFTPKey.Handle(context.Background(), commands.AddSFTPKey{Principal: admin, PublicKey: line})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.dialWith("globex", ssh.PublicKeys(signer)); err == nil {
		t.Error("acme's key logged in to globex")
	}
	c, err := e.dialWith("acme", ssh.PublicKeys(signer))
	if err != nil {
		t.Fatalf("registered key: %v", err)
	}
	put(t, c, "toclientele/customers.csv", []byte("customer_id,email\nC1,c1@x.test\n"))
	r := waitResult(t, c, "customers.csv")
	if r.State != "completed" {
		t.Errorf("result %+v", r)
	}
	var actor string
	if err := e.pool.QueryRow(context.Background(), `SELECT actor FROM import_runs WHERE id = $1`, r.RunID).Scan(&actor); err != nil || actor != "sftp-keys/"+k.ID {
		t.Errorf("run's actor %q, %v", actor, err)
	}
	if err := e.cmds.RemoveSFTPKey.Handle(context.Background(), commands.RemoveSFTPKey{Principal: admin, KeyID: k.ID}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.dialWith("acme", ssh.PublicKeys(signer)); err == nil {
		t.Error("a removed key logged in")
	}
}

// TestSFTPLogInRateLimited: failed log-ins are limited as HTTP password
// log-ins are: once a company's SFTP log-in has failed too often, even
// the right token is refused for a while.
func TestSFTPLogInRateLimited(t *testing.T) {
	e := newEnv(t)
	for i := 0; i < 10; i++ {
		if _, err := e.dial("acme", "wrong"); err == nil {
			t.Fatal("a wrong token logged in")
		}
	}
	if _, err := e.dial("acme", e.adminToken); err == nil {
		t.Fatal("logged in past the limit of failed log-ins")
	}
	if !strings.Contains(e.logs.String(), "too many failed log-ins") {
		t.Error("the refusal is not logged")
	}
	// Another company is not limited by acme's failures.
	if _, err := e.dial("globex", e.globexToken); err != nil {
		t.Errorf("globex: %v", err)
	}
}

// TestSFTPScopes: a token's scopes apply as if the file were posted to
// POST /api/<entity>/upload/: a token for sales uploads sales and nothing
// else, and a token that may upload nothing cannot log in.
func TestSFTPScopes(t *testing.T) {
	e := newEnv(t)
	p := access.System(e.acme.ID)
	in, err := e.cmds.CreateIntegration.Handle(context.Background(), commands.CreateIntegration{Principal: p, Name: "erp"})
	if err != nil {
		t.Fatal(err)
	}
	mk := func(scopes ...access.Scope) string {
		_, v, err := e.cmds.CreateAccessToken.Handle(context.Background(), commands.CreateAccessToken{
			Principal: p, OwnerID: access.IntegrationOwner(in.ID), Scopes: scopes})
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	customersOnly := mk(access.Scope{Method: "POST", Path: "/api/customers/upload/"})
	c, err := e.dial("acme", customersOnly)
	if err != nil {
		t.Fatal(err)
	}
	put(t, c, "toclientele/customers.csv", []byte("customer_id,email\nC1,c1@x.test\n"))
	waitResult(t, c, "customers.csv")
	_, err = c.Create("toclientele/sales.csv")
	// (pkg/sftp's client keeps the code, not the server's message.)
	if !errors.Is(err, os.ErrPermission) {
		t.Errorf("a sales upload with a customers token: %v", err)
	}
	// Renaming into a name of an entity it may not upload is refused too.
	put(t, c, "toclientele/x.part", []byte("sale_external_id\nS1\n"))
	if err := c.Rename("toclientele/x.part", "toclientele/sales.csv"); !errors.Is(err, os.ErrPermission) {
		t.Errorf("renaming to sales.csv with a customers token: %v", err)
	}
	if _, err := e.dial("acme", mk(access.Scope{Method: "GET", Path: "/api/data/customers/"})); err == nil {
		t.Error("a token that may upload nothing logged in")
	}
}

// TestSFTPNoWayOut: the tree has no way out: "..", absolute paths, links
// and directories of one's own are refused; the root holds toclientele/
// alone; processed/ and failed/ are not written by clients.
func TestSFTPNoWayOut(t *testing.T) {
	e := newEnv(t)
	c := e.mustDial()
	put(t, c, "toclientele/notes.part", []byte("x"))
	for _, p := range []string{"/etc/passwd", "../../../../etc/passwd", "toclientele/../../etc/passwd",
		"/toclientele/processed/../../../etc/passwd", "toclientele/processed/../../..//etc/hostname"} {
		if _, err := read(c, p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("read %s: %v", p, err)
		}
		if _, err := c.Create(p); err == nil {
			t.Errorf("created %s", p)
		}
	}
	list, err := c.ReadDir("/../..")
	if err != nil || len(list) != 1 || list[0].Name() != "toclientele" {
		t.Errorf("root: %v, %v", list, err)
	}
	if wd, err := c.Getwd(); err != nil || wd != "/" {
		t.Errorf("working directory %q, %v", wd, err)
	}
	for name, op := range map[string]func() error{
		"symlink":            func() error { return c.Symlink("/etc/passwd", "toclientele/link.part") },
		"hard link":          func() error { return c.Link("toclientele/notes.part", "toclientele/link.part") },
		"mkdir":              func() error { return c.Mkdir("toclientele/sub") },
		"rmdir":              func() error { return c.RemoveDirectory("toclientele/processed") },
		"write in processed": func() error { _, err := c.Create("toclientele/processed/customers.csv"); return err },
		"rename out":         func() error { return c.Rename("toclientele/notes.part", "/notes.part") },
		"rename to failed":   func() error { return c.Rename("toclientele/notes.part", "toclientele/failed/notes.part") },
		"readlink":           func() error { _, err := c.ReadLink("toclientele/notes.part"); return err },
		"append": func() error {
			_, err := c.OpenFile("toclientele/notes.part", os.O_WRONLY|os.O_APPEND)
			return err
		},
	} {
		if err := op(); err == nil {
			t.Errorf("%s succeeded", name)
		}
	}
	if _, err := read(c, "toclientele/notes.part"); err != nil {
		t.Errorf("the held file: %v", err)
	}
	for _, name := range []string{"a\x01b.csv", "a\u0085b.csv", "a\u009bb.csv"} {
		if _, err := c.Create("toclientele/" + name); !errors.Is(err, os.ErrPermission) {
			t.Errorf("a name with a control character %q: %v", name, err)
		}
	}
}

// TestSFTPLogInRateLimitedAnyCase: the count of a company's failed
// log-ins is the same however its slug is spelled ("ACME", " acme"), as
// the company is found whatever the spelling.
func TestSFTPLogInRateLimitedAnyCase(t *testing.T) {
	e := newEnv(t)
	for i := 0; i < 10; i++ {
		if _, err := e.dial("acme", "wrong"); err == nil {
			t.Fatal("a wrong token logged in")
		}
	}
	for _, user := range []string{"ACME", "Acme", " acme"} {
		if _, err := e.dial(user, e.adminToken); err == nil {
			t.Errorf("%q logged in past the limit of acme's failed log-ins", user)
		}
	}
}

// tokensFunc and keysFunc count the look-ups of the log-ins.
type tokensFunc func(ctx context.Context, companyID, token string) (access.Principal, error)

func (f tokensFunc) AuthenticateToken(ctx context.Context, companyID, token string) (access.Principal, error) {
	return f(ctx, companyID, token)
}

func (f tokensFunc) Recheck(context.Context, access.Principal) (access.Principal, error) {
	return access.Principal{}, access.InvalidToken()
}

type keysFunc func(ctx context.Context, companyID, fingerprint string) (access.SFTPKey, error)

func (f keysFunc) ByFingerprint(ctx context.Context, companyID, fingerprint string) (access.SFTPKey, error) {
	return f(ctx, companyID, fingerprint)
}

// TestSFTPUnknownCompanyLooksUp: a log-in to a company that does not
// exist does the work of one with a wrong token or key (a look-up), so
// that its answer takes as long and does not tell which companies exist.
func TestSFTPUnknownCompanyLooksUp(t *testing.T) {
	var tokens, keys atomic.Int32
	e := newEnv(t, with(func(c *sftp.Config) {
		real, realKeys := c.Tokens, c.Keys
		c.Tokens = tokensFunc(func(ctx context.Context, companyID, token string) (access.Principal, error) {
			tokens.Add(1)
			return real.AuthenticateToken(ctx, companyID, token)
		})
		c.Keys = keysFunc(func(ctx context.Context, companyID, fingerprint string) (access.SFTPKey, error) {
			keys.Add(1)
			return realKeys.ByFingerprint(ctx, companyID, fingerprint)
		})
	}))
	for _, user := range []string{"nosuch", "not a slug!"} {
		tokens.Store(0)
		if _, err := e.dial(user, e.adminToken); err == nil {
			t.Fatalf("%q logged in", user)
		}
		if n := tokens.Load(); n != 1 {
			t.Errorf("%q: %d token look-ups, want 1 as for a wrong token", user, n)
		}
	}
	signer, _ := newKey(t, "x")
	if _, err := e.dialWith("nosuch", ssh.PublicKeys(signer)); err == nil {
		t.Fatal("a key logged in to no company")
	}
	if n := keys.Load(); n != 1 {
		t.Errorf("%d key look-ups, want 1 as for an unknown key", n)
	}
}

// TestSFTPErrorsHideServerPaths: what fails on the server's disk is told
// to the client with its own path, not the server's.
func TestSFTPErrorsHideServerPaths(t *testing.T) {
	e := newEnv(t)
	c := e.mustDial()
	incoming := filepath.Join(e.cfg.Dir, "incoming")
	// A broken spool: opening an upload fails with ENOTDIR.
	if err := os.Remove(incoming); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(incoming, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := c.Create("toclientele/customers.csv")
	if err == nil {
		t.Fatal("an upload opened in a broken spool")
	}
	if strings.Contains(err.Error(), e.cfg.Dir) || !strings.Contains(err.Error(), "/toclientele/customers.csv") {
		t.Errorf("the client is told %q", err)
	}
}

// TestSFTPLogInLogBounded: a failed log-in's user name, which the client
// chooses, is logged cut short: a client must not write 256 KiB of log
// per try.
func TestSFTPLogInLogBounded(t *testing.T) {
	e := newEnv(t)
	if _, err := e.dial(strings.Repeat("a", 100_000), "wrong"); err == nil {
		t.Fatal("logged in")
	}
	if !strings.Contains(e.logs.String(), "sftp: log-in failed") {
		t.Fatal("the failed log-in is not logged")
	}
	if strings.Contains(e.logs.String(), strings.Repeat("a", 200)) {
		t.Error("the user name is logged whole")
	}
}
