package sftp_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/alexedwards/argon2id"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	pkgsftp "github.com/pkg/sftp"
	"golang.org/x/crypto/ssh"

	"github.com/clientele/clientele/api"
	"github.com/clientele/clientele/app"
	"github.com/clientele/clientele/authn"
	"github.com/clientele/clientele/commands"
	"github.com/clientele/clientele/commands/imports"
	"github.com/clientele/clientele/domain/access"
	"github.com/clientele/clientele/domain/company"
	"github.com/clientele/clientele/domain/importing"
	"github.com/clientele/clientele/eventstore/postgres"
	"github.com/clientele/clientele/internal/bus"
	"github.com/clientele/clientele/internal/crypto"
	"github.com/clientele/clientele/internal/ingest"
	"github.com/clientele/clientele/internal/pg/pgtest"
	"github.com/clientele/clientele/internal/secret"
	"github.com/clientele/clientele/internal/testlog"
	"github.com/clientele/clientele/projections"
	"github.com/clientele/clientele/projections/projectors"
	"github.com/clientele/clientele/readmodels"
	"github.com/clientele/clientele/sftp"
)

func TestMain(m *testing.M) {
	secret.PasswordParams = &argon2id.Params{Memory: 1024, Iterations: 1, Parallelism: 1, SaltLength: 16, KeyLength: 32}
	os.Exit(pgtest.Main(m))
}

// env is a database with two companies (acme, globex), the import worker
// running, and an SFTP server on a free port; restart replaces the server
// on the same directory, as a new process would.
type env struct {
	t      *testing.T
	pool   *pgxpool.Pool
	store  *postgres.Store
	cmds   commands.Commands
	keys   crypto.KeyStore
	acme   company.Company
	globex company.Company
	// adminToken is an acme admin's token; globexToken globex's.
	adminToken, globexToken string
	logs                    *testlog.Buffer
	// api is the HTTP API on the same database, served by ServeHTTP.
	api *api.Server

	cfg     sftp.Config
	hostKey ssh.Signer
	addr    string
	stop    func()
}

type option func(*sftp.Config)

func withMaxFileBytes(n int64) option { return func(c *sftp.Config) { c.MaxFileBytes = n } }

// with applies any change to the configuration.
func with(f func(c *sftp.Config)) option { return f }

func newEnv(t *testing.T, opts ...option) *env {
	t.Helper()
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	store := postgres.New(pool, projectors.InlineHook(), projections.CommitPublisher{})
	kr, err := crypto.NewKeyring(crypto.NewMasterKey())
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, pool: pool, store: store, cmds: commands.New(store, time.Now), keys: crypto.KeyStore{Keyring: kr}, logs: &testlog.Buffer{}}
	e.acme = e.company(ctx, "acme")
	e.globex = e.company(ctx, "globex")
	e.adminToken = e.userToken(ctx, e.acme, "admin@acme.test", access.RoleAdmin)
	e.globexToken = e.userToken(ctx, e.globex, "admin@globex.test", access.RoleAdmin)
	e.runImports()

	logger := slog.New(slog.NewJSONHandler(io.MultiWriter(e.logs), &slog.HandlerOptions{Level: slog.LevelDebug}))
	apiSrv, err := api.NewServer(api.Config{BaseDomain: "localhost", Logger: logger}, app.Application{
		Commands: app.Commands{Commands: e.cmds, Authenticator: authn.New(pool, readmodels.NewAccess(pool))},
		Queries: app.Queries{Companies: readmodels.NewCompanies(pool, "localhost"), Access: readmodels.NewAccess(pool),
			Customers: readmodels.NewCustomers(pool), CustomerHistory: readmodels.NewCustomerHistory(store, pool, e.keys),
			Datatargets: readmodels.NewDatatargets(pool, e.keys), SFTPKeys: readmodels.NewSFTPKeys(pool)},
	})
	if err != nil {
		t.Fatal(err)
	}
	e.api = apiSrv
	dir := t.TempDir()
	key, _, err := sftp.LoadHostKey(filepath.Join(dir, "host_key"))
	if err != nil {
		t.Fatal(err)
	}
	e.hostKey = key
	e.cfg = sftp.Config{
		HostKey: key, Dir: filepath.Join(dir, "sftp"), MaxFileBytes: 1 << 30,
		Companies: readmodels.NewCompanies(pool, ""), Tokens: authn.New(pool, readmodels.NewAccess(pool)), Keys: readmodels.NewSFTPKeys(pool),
		LogIns: apiSrv.LogIns(), Uploads: imports.NewStageUploadHandler(pool, e.keys, ingest.Limits{}), Runs: readmodels.NewImports(pool),
		Logger: logger, PollInterval: 20 * time.Millisecond, RetryMax: 100 * time.Millisecond,
	}
	for _, o := range opts {
		o(&e.cfg)
	}
	e.start()
	t.Cleanup(func() { e.stop() })
	return e
}

// start runs a server on e.cfg, on a port of its own: a restarted server
// does not get its old port back (another test's process may hold it by
// then), and every client dials e.addr afresh.
func (e *env) start() {
	e.t.Helper()
	srv, err := sftp.New(e.cfg)
	if err != nil {
		e.t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		e.t.Fatal(err)
	}
	e.addr = ln.Addr().String()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		if err := srv.Serve(ctx, ln); err != nil {
			e.t.Errorf("serve: %v", err)
		}
	}()
	go func() {
		defer wg.Done()
		if err := srv.Run(ctx); err != nil {
			e.t.Errorf("run: %v", err)
		}
	}()
	e.stop = func() {
		cancel()
		wg.Wait()
		srv.Close()
		e.stop = func() {}
	}
}

func (e *env) restart() {
	e.t.Helper()
	e.stop()
	e.start()
}

func (e *env) company(ctx context.Context, slug string) company.Company {
	e.t.Helper()
	co, err := e.cmds.CreateCompany.Handle(ctx, commands.CreateCompany{Principal: access.System(""), Slug: slug, Settings: company.Settings{Name: slug}})
	if err != nil {
		e.t.Fatal(err)
	}
	return co
}

// userToken creates a user with role and a token of theirs.
func (e *env) userToken(ctx context.Context, co company.Company, email string, role access.Role) string {
	e.t.Helper()
	u, err := e.cmds.CreateUser.Handle(ctx, commands.CreateUser{Principal: access.System(co.ID), Email: email, Password: "correct horse battery", Roles: []access.Role{role}})
	if err != nil {
		e.t.Fatal(err)
	}
	return e.token(co, access.Principal{CompanyID: co.ID, UserID: u.User.ID, Roles: []access.Role{role}}, nil)
}

// token creates a token of p's own with scopes.
func (e *env) token(co company.Company, p access.Principal, scopes []access.Scope) string {
	e.t.Helper()
	_, value, err := e.cmds.CreateAccessToken.Handle(context.Background(), commands.CreateAccessToken{Principal: p, Scopes: scopes})
	if err != nil {
		e.t.Fatal(err)
	}
	return value
}

func (e *env) runImports() {
	e.t.Helper()
	now := time.Now
	w, err := imports.NewImportWorker(imports.ImportWorkerConfig{
		Pool: e.pool, Keys: e.keys, Companies: readmodels.NewCompanies(e.pool, ""),
		Importers: map[importing.Entity]imports.Importer{
			importing.Customers: imports.NewCustomerImporter(e.store, e.keys, now),
			importing.Shops:     imports.NewShopImporter(e.store),
			importing.Products:  imports.NewProductImporter(e.store),
			importing.Events:    imports.NewEventImporter(e.store, e.keys, now),
			importing.Sales:     imports.NewSaleImporter(e.store, e.keys, now),
		},
		ConsumerSettings: bus.ConsumerSettings{
			PollInterval: 50 * time.Millisecond, RetryMaxInterval: 50 * time.Millisecond,
			Logger: slog.New(slog.NewJSONHandler(e.logs, nil)),
		},
	})
	if err != nil {
		e.t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- w.Run(context.Background()) }()
	e.t.Cleanup(func() {
		_ = w.Close()
		if err := <-done; err != nil {
			e.t.Errorf("import worker: %v", err)
		}
	})
}

// dial logs in with a password (an access token) and returns the client.
func (e *env) dial(user, password string) (*pkgsftp.Client, error) {
	return e.dialWith(user, ssh.Password(password))
}

func (e *env) dialWith(user string, auth ...ssh.AuthMethod) (*pkgsftp.Client, error) {
	conn, err := ssh.Dial("tcp", e.addr, &ssh.ClientConfig{
		User: user, Auth: auth, HostKeyCallback: ssh.FixedHostKey(e.hostKey.PublicKey()), Timeout: 10 * time.Second,
	})
	if err != nil {
		return nil, err
	}
	c, err := pkgsftp.NewClient(conn, pkgsftp.UseConcurrentWrites(true))
	if err != nil {
		conn.Close()
		return nil, err
	}
	e.t.Cleanup(func() { c.Close(); conn.Close() })
	return c, nil
}

// mustDial logs in to acme as its admin.
func (e *env) mustDial() *pkgsftp.Client {
	e.t.Helper()
	c, err := e.dial("acme", e.adminToken)
	if err != nil {
		e.t.Fatal(err)
	}
	return c
}

// put uploads data as name, through concurrent out-of-order writes as
// OpenSSH makes them.
func put(t *testing.T, c *pkgsftp.Client, name string, data []byte) {
	t.Helper()
	f, err := c.Create(name)
	if err != nil {
		t.Fatalf("create %s: %v", name, err)
	}
	if _, err := f.ReadFrom(bytes.NewReader(data)); err != nil {
		t.Fatalf("write %s: %v", name, err)
	}
	if err := f.Close(); err != nil {
		t.Fatalf("close %s: %v", name, err)
	}
}

// read downloads a file.
func read(c *pkgsftp.Client, name string) ([]byte, error) {
	f, err := c.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

// result is a .result.json.
type result struct {
	File       string `json:"file"`
	RunID      string `json:"run_id"`
	Entity     string `json:"entity"`
	State      string `json:"state"`
	Received   int64  `json:"received"`
	Accepted   int64  `json:"accepted"`
	Rejected   int64  `json:"rejected"`
	Failure    string `json:"failure"`
	Rejections []struct {
		Index  int    `json:"index"`
		Reason string `json:"reason"`
		Field  string `json:"field"`
	} `json:"rejections"`
}

// waitResult waits until processed/<name>.result.json shows a finished
// run, read over SFTP, and returns it.
func waitResult(t *testing.T, c *pkgsftp.Client, name string) result {
	t.Helper()
	var r result
	waitFor(t, "the result of "+name, func() bool {
		b, err := read(c, "toclientele/processed/"+name+".result.json")
		if err != nil {
			return false
		}
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatalf("result of %s: %v: %s", name, err, b)
		}
		// The result is written first, then the file moved beside it.
		_, err = c.Stat("toclientele/processed/" + name)
		return err == nil && (r.State == "completed" || r.State == "failed")
	})
	return r
}

// waitFailed waits for failed/<name>.error.txt and returns it.
func waitFailed(t *testing.T, c *pkgsftp.Client, name string) string {
	t.Helper()
	var text []byte
	waitFor(t, name+" in failed/", func() bool {
		var err error
		text, err = read(c, "toclientele/failed/"+name+".error.txt")
		if err != nil {
			return false
		}
		// The error is written first, then the file moved beside it.
		_, err = c.Stat("toclientele/failed/" + name)
		return err == nil
	})
	return string(text)
}

// waitFor polls cond until it holds, for at most 30 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// runs returns the company's import runs: id, source and state.
func (e *env) runs(companyID string) []runRow {
	e.t.Helper()
	rows, err := e.pool.Query(context.Background(), `SELECT id, source, state, received FROM import_runs WHERE company_id = $1 ORDER BY created_at`, companyID)
	if err != nil {
		e.t.Fatal(err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[runRow])
	if err != nil {
		e.t.Fatal(err)
	}
	return out
}

type runRow struct {
	ID, Source, State string
	Received          int64
}

// eventSources returns the distinct sources in the metadata of the
// events the run appended.
func (e *env) eventSources(runID string) []string {
	e.t.Helper()
	rows, err := e.pool.Query(context.Background(), `SELECT DISTINCT metadata->>'source' FROM events WHERE metadata->>'run_id' = $1`, runID)
	if err != nil {
		e.t.Fatal(err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		e.t.Fatal(err)
	}
	return out
}

// newKey returns a fresh ed25519 key pair: the signer and its
// authorized_keys line.
func newKey(t *testing.T, comment string) (ssh.Signer, string) {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	s, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	return s, strings.TrimSpace(string(ssh.MarshalAuthorizedKey(s.PublicKey()))) + " " + comment
}
