package console_test

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alexedwards/argon2id"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/clientele/clientele/api"
	"github.com/clientele/clientele/app"
	"github.com/clientele/clientele/authn"
	"github.com/clientele/clientele/commands"
	"github.com/clientele/clientele/commands/imports"
	"github.com/clientele/clientele/console"
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
)

func TestMain(m *testing.M) {
	// Cheap password hashes: the tests check the flow, not the hashing.
	secret.PasswordParams = &argon2id.Params{Memory: 1024, Iterations: 1, Parallelism: 1, SaltLength: 16, KeyLength: 32}
	code := pgtest.Main(m)
	closeBrowser()
	os.Exit(code)
}

const password = "correct horse battery"

// user is a user made for a test.
type user struct {
	ID, Email, TOTPSecret string
}

// env is the service as `serve` runs it, on a fresh database: the API
// server with the console mounted, the import worker and the async
// projections, and two companies: acme (an admin, a staff user, an admin
// with TOTP) and globex (an admin).
type env struct {
	t           *testing.T
	srv         *httptest.Server
	pool        *pgxpool.Pool
	cmds        commands.Commands
	acme        company.Company
	globex      company.Company
	admin       user
	staff       user
	totp        user
	globexAdmin user
	store       *postgres.Store
	keys        crypto.KeyStore
	uploads     imports.StageUploadHandler
	// staging, when set, is told of each staging that begins
	// (signalingUploads).
	staging *atomic.Pointer[chan struct{}]
}

const (
	acmeHost   = "acme.localhost"
	globexHost = "globex.localhost"
)

func newEnv(t *testing.T) *env {
	t.Helper()
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	store := postgres.New(pool, projectors.InlineHook(), projections.CommitPublisher{})
	kr, err := crypto.NewKeyring(crypto.NewMasterKey())
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, pool: pool, store: store, keys: crypto.KeyStore{Keyring: kr}, cmds: commands.New(store, time.Now, commands.WithSealer(kr)),
		staging: new(atomic.Pointer[chan struct{}])}
	e.acme = e.mustCompany(ctx, "acme")
	e.globex = e.mustCompany(ctx, "globex")
	e.admin = e.mustUser(ctx, e.acme, "admin@acme.test", access.RoleAdmin, false)
	e.staff = e.mustUser(ctx, e.acme, "staff@acme.test", access.RoleStaff, false)
	e.totp = e.mustUser(ctx, e.acme, "totp@acme.test", access.RoleAdmin, true)
	e.globexAdmin = e.mustUser(ctx, e.globex, "admin@globex.test", access.RoleAdmin, false)

	// The service's log is shown when the test fails.
	logs := &testlog.Buffer{}
	logger := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("service log:\n%s", logs.String())
		}
	})
	acc := readmodels.NewAccess(pool)
	importRuns := readmodels.NewImports(pool)
	e.uploads = imports.NewStageUploadHandler(pool, e.keys, ingest.Limits{})
	importers := map[importing.Entity]imports.Importer{
		importing.Customers: imports.NewCustomerImporter(store, e.keys, time.Now),
		importing.Events:    imports.NewEventImporter(store, e.keys, time.Now),
		importing.Sales:     imports.NewSaleImporter(store, e.keys, time.Now),
	}
	customers, events, sales := readmodels.NewCustomers(pool), readmodels.NewEvents(pool), readmodels.NewSales(pool)
	application := app.Application{
		Commands: app.Commands{
			Commands:      e.cmds,
			Importers:     importers,
			Uploads:       signalingUploads{Uploads: e.uploads, e: e},
			Authenticator: authn.New(pool, acc),
			Sessions:      authn.NewConsoleSessions(pool, acc, authn.DefaultSessionTTL),
		},
		Queries: app.Queries{
			Companies:        readmodels.NewCompanies(pool, "localhost"),
			Access:           acc,
			Datatargets:      readmodels.NewDatatargets(pool, e.keys),
			Customers:        customers,
			CustomerHistory:  readmodels.NewCustomerHistory(store, pool, e.keys),
			Events:           events,
			Sales:            sales,
			Imports:          importRuns,
			Campaigns:        readmodels.NewCampaigns(pool),
			Segments:         readmodels.NewSegments(pool),
			SFTPKeys:         readmodels.NewSFTPKeys(pool),
			ProjectionStatus: projectionStatus(pool, store, asyncProjectors(e.keys)),
		},
	}
	s, err := api.NewServer(api.Config{BaseDomain: "localhost", Logger: logger}, application)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := console.Mount(s, console.Config{Logger: logger}, application); err != nil {
		t.Fatal(err)
	}
	e.srv = httptest.NewServer(s)
	t.Cleanup(e.srv.Close)

	// The import worker and the async projections run as under serve.
	w, err := imports.NewImportWorker(imports.ImportWorkerConfig{
		Pool: pool, Keys: e.keys, Importers: importers, Companies: readmodels.NewCompanies(pool, ""),
		ConsumerSettings: bus.ConsumerSettings{PollInterval: 50 * time.Millisecond, RetryMaxInterval: 50 * time.Millisecond, Logger: logger},
	})
	if err != nil {
		t.Fatal(err)
	}
	wDone := make(chan error, 1)
	go func() { wDone <- w.Run(context.Background()) }()
	rt, err := projections.NewRuntime(projections.RuntimeConfig{
		// The store's commits wake the projectors (eventstore.CommitsOf):
		// the poll is only their fallback, and idle environments cost the
		// database little while the browser works.
		Pool: pool, Store: store, ConsumerSettings: bus.ConsumerSettings{PollInterval: 500 * time.Millisecond, Logger: logger},
		Async: asyncProjectors(e.keys),
	})
	if err != nil {
		t.Fatal(err)
	}
	rtCtx, stop := context.WithCancel(context.Background())
	rtDone := make(chan error, 1)
	go func() { rtDone <- rt.Run(rtCtx) }()
	t.Cleanup(func() {
		_ = w.Close()
		if err := <-wDone; err != nil {
			t.Errorf("import worker: %v", err)
		}
		stop()
		if err := <-rtDone; err != nil {
			t.Errorf("projections: %v", err)
		}
	})
	return e
}

func (e *env) mustCompany(ctx context.Context, slug string) company.Company {
	e.t.Helper()
	co, err := e.cmds.CreateCompany.Handle(ctx, commands.CreateCompany{
		Principal: access.System(""), Slug: slug,
		Settings: company.Settings{Name: strings.ToUpper(slug[:1]) + slug[1:]},
	})
	if err != nil {
		e.t.Fatalf("create company %s: %v", slug, err)
	}
	return co
}

func (e *env) mustUser(ctx context.Context, co company.Company, email string, role access.Role, totp bool) user {
	e.t.Helper()
	u, err := e.cmds.CreateUser.Handle(ctx, commands.CreateUser{
		Principal: access.System(co.ID), Email: email, Password: password, Roles: []access.Role{role}, TOTP: totp,
	})
	if err != nil {
		e.t.Fatalf("create user %s: %v", email, err)
	}
	return user{ID: u.User.ID, Email: email, TOTPSecret: u.TOTPSecret}
}

// port is the test server's port.
func (e *env) port() string {
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(e.srv.URL, "http://"))
	return port
}

// url is the address of path on host, as a browser names it.
func (e *env) url(host, path string) string {
	return "http://" + host + ":" + e.port() + path
}

// upload stages records for the company as its admin would through the
// API, and waits until the run and the read models are done with it.
func (e *env) mustImport(co company.Company, entity importing.Entity, csv string) string {
	e.t.Helper()
	ctx := context.Background()
	admin := access.Principal{CompanyID: co.ID, UserID: e.admin.ID, Roles: []access.Role{access.RoleAdmin}}
	format := ingest.CSV
	up, err := e.uploads.Handle(ctx, imports.StageUpload{Principal: admin, Entity: entity, Format: format, Body: strings.NewReader(csv)})
	if err != nil {
		e.t.Fatal(err)
	}
	if state := e.waitRun(up.RunID); state != "completed" {
		e.t.Fatalf("run %s: %s", up.RunID, state)
	}
	var rejected int
	if err := e.pool.QueryRow(ctx, `SELECT rejected FROM import_runs WHERE id = $1`, up.RunID).Scan(&rejected); err != nil {
		e.t.Fatal(err)
	}
	if rejected != 0 {
		var field, reason string
		_ = e.pool.QueryRow(ctx, `SELECT field, reason FROM import_rejections WHERE run_id = $1 LIMIT 1`, up.RunID).Scan(&field, &reason)
		e.t.Fatalf("run %s rejected %d records: %s %s", up.RunID, rejected, field, reason)
	}
	return up.RunID
}

// waitRun waits until a run is completed or failed.
func (e *env) waitRun(runID string) string {
	e.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var state string
		if err := e.pool.QueryRow(context.Background(), `SELECT state FROM import_runs WHERE id = $1`, runID).Scan(&state); err != nil {
			e.t.Fatal(err)
		}
		if state == "completed" || state == "failed" {
			return state
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("run %s still %s after 30 s", runID, state)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitCustomer waits until retrieval shows a customer matching field =
// value, and returns its id.
func (e *env) waitCustomer(co company.Company, field, value string) string {
	e.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var id string
		err := e.pool.QueryRow(context.Background(), `SELECT customer_id FROM customers WHERE company_id = $1 AND doc->>$2 = $3`,
			co.ID, field, value).Scan(&id)
		if err == nil {
			return id
		}
		if err != pgx.ErrNoRows {
			e.t.Fatal(err)
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("no customer with %s = %s after 30 s", field, value)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// client is a plain HTTP client that keeps cookies and does not follow
// redirects, speaking to the test server under host.
type client struct {
	t    *testing.T
	e    *env
	host string
	http *http.Client
}

func (e *env) client(host string) *client {
	jar, err := cookiejar.New(nil)
	if err != nil {
		e.t.Fatal(err)
	}
	dial := &net.Dialer{}
	addr := strings.TrimPrefix(e.srv.URL, "http://")
	return &client{t: e.t, e: e, host: host, http: &http.Client{
		Jar: jar,
		// Every host is the test server, as DNS would have it.
		Transport: &http.Transport{DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return dial.DialContext(ctx, network, addr)
		}},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
}

// do sends a request; header may set headers (Sec-Fetch-Site, Origin).
func (c *client) do(method, path string, form url.Values, header map[string]string) (*http.Response, string) {
	c.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, c.e.url(c.host, path), body)
	if err != nil {
		c.t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	res, err := c.http.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		c.t.Fatal(err)
	}
	return res, string(b)
}

// sameOrigin are the headers a browser sends with a form of the page's
// own origin.
var sameOrigin = map[string]string{"Sec-Fetch-Site": "same-origin"}

// logIn logs in and fails the test unless it succeeds.
func (c *client) logIn(email, totpCode string) {
	c.t.Helper()
	res, body := c.do(http.MethodPost, "/console/login",
		url.Values{"email": {email}, "password": {password}, "totp": {totpCode}}, sameOrigin)
	if res.StatusCode != http.StatusSeeOther {
		c.t.Fatalf("log-in as %s: %d\n%s", email, res.StatusCode, body)
	}
}

// waitRow waits until a read model's table holds a row of the company
// (the async projections follow the log within moments).
func (e *env) waitRow(co company.Company, table string) {
	e.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var n int
		if err := e.pool.QueryRow(context.Background(), `SELECT count(*) FROM `+pgx.Identifier{table}.Sanitize()+` WHERE company_id = $1`, co.ID).Scan(&n); err != nil {
			e.t.Fatal(err)
		}
		if n > 0 {
			return
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("no row in %s after 30 s", table)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// postThenGet sends a form as do does, and when it is answered with a
// redirect (POST/redirect/GET), loads the page it redirects to, as a
// browser does: the answer and page are the page's.
func (c *client) postThenGet(path string, form url.Values) (*http.Response, string) {
	c.t.Helper()
	res, body := c.do(http.MethodPost, path, form, sameOrigin)
	if res.StatusCode != http.StatusSeeOther {
		return res, body
	}
	return c.do(http.MethodGet, res.Header.Get("Location"), nil, nil)
}
