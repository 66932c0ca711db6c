package systemtest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/alexedwards/argon2id"
	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/clientele/clientele/api"
	"github.com/clientele/clientele/app"
	"github.com/clientele/clientele/authn"
	"github.com/clientele/clientele/commands"
	"github.com/clientele/clientele/commands/imports"
	"github.com/clientele/clientele/delivery"
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
	retrievalproj "github.com/clientele/clientele/projections/retrieval"
	"github.com/clientele/clientele/readmodels"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden")

func TestMain(m *testing.M) {
	// Cheap password hashes: the tests check the flow, not the hashing.
	secret.PasswordParams = &argon2id.Params{Memory: 1024, Iterations: 1, Parallelism: 1, SaltLength: 16, KeyLength: 32}
	code := pgtest.Main(m)
	if n := contractStats.validated.Load(); n > 0 {
		fmt.Printf("docs/openapi.yaml: %d answers validated, %d opted out\n", n, contractStats.optedOut.Load())
	}
	os.Exit(code)
}

// created is the fixed time of the commands' clock, so answers have
// stable timestamps.
var created = time.Date(2025, 1, 2, 3, 4, 5, 123456000, time.UTC)

const password = "correct horse battery"

// user is a user made for a test, with what it logs in with.
type user struct {
	ID, Email, TOTPSecret string
}

// env is a server on a fresh database with two companies: acme (an admin,
// a staff user and a user with TOTP) and globex (an admin).
type env struct {
	t        *testing.T
	srv      *httptest.Server
	api      *api.Server
	cmds     commands.Commands
	acme     company.Company
	globex   company.Company
	admin    user // acme
	staff    user // acme
	totp     user // acme, admin with two-factor authentication
	globexAd user
	logs     *testlog.Buffer

	pool    *pgxpool.Pool
	store   *postgres.Store
	keys    crypto.KeyStore // customers' data keys
	runtime *projections.Runtime
	// importers are the server's Commands.Importers; runImports runs them.
	importers map[importing.Entity]imports.Importer
}

// newEnv starts the server; configure may change its Config and application.
//
// The test runs in parallel with the other tests that do (t.Parallel):
// each env has its own database, server, clock and logs. A test that
// changes or measures what the whole process shares (secret.PasswordParams,
// the memory statistics) uses newSerialEnv instead, and runs alone, before
// the parallel tests.
func newEnv(t *testing.T, configure ...func(*api.Config, *app.Application)) *env {
	t.Helper()
	t.Parallel()
	return startEnv(t, configure...)
}

// newSerialEnv is newEnv for a test that must run alone (see newEnv).
func newSerialEnv(t *testing.T, configure ...func(*api.Config, *app.Application)) *env {
	t.Helper()
	return startEnv(t, configure...)
}

func startEnv(t *testing.T, configure ...func(*api.Config, *app.Application)) *env {
	t.Helper()
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	store := postgres.New(pool, projectors.InlineHook(), projections.CommitPublisher{}) // for the async projectors of runProjections
	kr, err := crypto.NewKeyring(crypto.NewMasterKey())
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, cmds: commands.New(store, func() time.Time { return created }, commands.WithSealer(kr)), logs: &testlog.Buffer{},
		pool: pool, store: store, keys: crypto.KeyStore{Keyring: kr}}
	e.acme = e.mustCompany(ctx, "acme")
	e.globex = e.mustCompany(ctx, "globex")
	e.admin = e.mustUser(ctx, e.acme, "admin@acme.test", access.RoleAdmin, false)
	e.staff = e.mustUser(ctx, e.acme, "staff@acme.test", access.RoleStaff, false)
	e.totp = e.mustUser(ctx, e.acme, "totp@acme.test", access.RoleAdmin, true)
	e.globexAd = e.mustUser(ctx, e.globex, "admin@globex.test", access.RoleAdmin, false)

	cfg := api.Config{
		BaseDomain: "localhost",
		// The deliverers of the tests allow loopback (runDeliverer).
		RefusedOutletURL: func(ctx context.Context, rawURL string) string {
			return delivery.RefusedURL(ctx, []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}, rawURL)
		},
		Logger: slog.New(slog.NewJSONHandler(e.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	}
	acc := readmodels.NewAccess(pool)
	deps := app.Application{
		Commands: app.Commands{
			Commands: e.cmds,
			Importers: map[importing.Entity]imports.Importer{
				importing.Customers: imports.NewCustomerImporter(store, e.keys, func() time.Time { return created }),
				importing.Shops:     imports.NewShopImporter(store),
				importing.Products:  imports.NewProductImporter(store),
				importing.Events:    imports.NewEventImporter(store, e.keys, func() time.Time { return created }),
				importing.Sales:     imports.NewSaleImporter(store, e.keys, func() time.Time { return created }),
			},
			Uploads: imports.NewStageUploadHandler(pool, e.keys, ingest.Limits{}),
			DataQueries: imports.NewRunDataQueryHandler(readmodels.NewMatcher(pool),
				imports.NewStageUploadHandler(pool, e.keys, ingest.Limits{})),
			Authenticator: authn.New(pool, acc),
		},
		Queries: app.Queries{
			Companies: readmodels.NewCompanies(pool, "localhost"),
			Access:    acc,
			Ready:     pool.Ping,
			Stalled: func(ctx context.Context) (map[string]int, error) {
				if e.runtime == nil {
					return nil, nil
				}
				return e.runtime.StalledCompanies(ctx)
			},

			Customers:       readmodels.NewCustomers(pool),
			CustomerHistory: readmodels.NewCustomerHistory(store, pool, e.keys),
			CustomerAsOf:    readmodels.NewCustomerAsOf(store, pool, retrievalproj.NewCustomers(e.keys)),
			Changes:         readmodels.NewChanges(store, pool, e.keys),

			Datatargets: readmodels.NewDatatargets(pool, e.keys),
			Campaigns:   readmodels.NewCampaigns(pool),
			Segments:    readmodels.NewSegments(pool),
			Shops:       readmodels.NewShops(pool),
			Products:    readmodels.NewProducts(pool),
			Events:      readmodels.NewEvents(pool),
			Sales:       readmodels.NewSales(pool),

			Imports:  readmodels.NewImports(pool),
			SFTPKeys: readmodels.NewSFTPKeys(pool),
		},
	}
	for _, f := range configure {
		f(&cfg, &deps)
	}
	e.importers = deps.Commands.Importers
	s, err := api.NewServer(cfg, deps)
	if err != nil {
		t.Fatal(err)
	}
	e.api = s
	e.srv = httptest.NewServer(s)
	t.Cleanup(e.srv.Close)
	return e
}

func (e *env) mustCompany(ctx context.Context, slug string) company.Company {
	e.t.Helper()
	co, err := e.cmds.CreateCompany.Handle(ctx, commands.CreateCompany{
		Principal: access.System(""),
		Slug:      slug,
		Settings:  company.Settings{Name: strings.ToUpper(slug[:1]) + slug[1:]},
	})
	if err != nil {
		e.t.Fatalf("create company %s: %v", slug, err)
	}
	return co
}

func (e *env) mustUser(ctx context.Context, co company.Company, email string, role access.Role, totp bool) user {
	e.t.Helper()
	u, err := e.cmds.CreateUser.Handle(ctx, commands.CreateUser{
		Principal: access.System(co.ID),
		Email:     email,
		Password:  password,
		Roles:     []access.Role{role},
		TOTP:      totp,
	})
	if err != nil {
		e.t.Fatalf("create user %s: %v", email, err)
	}
	return user{ID: u.User.ID, Email: email, TOTPSecret: u.TOTPSecret}
}

// Hosts of the two companies.
const (
	acmeHost   = "acme.localhost"
	globexHost = "globex.localhost"
)

// request is one request to make; see the option functions.
type request struct {
	method, host, path string
	body               io.Reader
	header             http.Header
	query              url.Values
	contentLength      int64 // -1: unknown (chunked)
	// outsideContract, when set, is why the answer is not checked
	// against docs/openapi.yaml (see outsideContract).
	outsideContract string
}

type option func(*request)

// bearer sends token as Authorization: Bearer.
func bearer(token string) option {
	return withHeader("Authorization", "Bearer "+token)
}

func basic(user, pass string) option {
	return func(r *request) {
		req := &http.Request{Header: http.Header{}}
		req.SetBasicAuth(user, pass)
		r.header.Set("Authorization", req.Header.Get("Authorization"))
	}
}

func withHeader(k, v string) option { return func(r *request) { r.header.Set(k, v) } }

func withQuery(k, v string) option { return func(r *request) { r.query.Set(k, v) } }

func host(h string) option { return func(r *request) { r.host = h } }

// jsonBody sends v encoded as JSON.
func jsonBody(v any) option {
	return func(r *request) {
		b, err := json.Marshal(v)
		if err != nil {
			panic(err)
		}
		r.body = bytes.NewReader(b)
		r.contentLength = int64(len(b))
	}
}

// rawBody sends s as it is.
func rawBody(s string) option {
	return func(r *request) { r.body = strings.NewReader(s); r.contentLength = int64(len(s)) }
}

// streamBody sends body without a declared length.
func streamBody(body io.Reader) option {
	return func(r *request) { r.body = body; r.contentLength = -1 }
}

// response is an answer, read whole.
type response struct {
	status int
	header http.Header
	body   []byte
}

// do makes a request to acme's host unless an option says otherwise.
func (e *env) do(method, path string, opts ...option) response {
	e.t.Helper()
	r := request{method: method, host: acmeHost, path: path, header: http.Header{}, query: url.Values{}}
	for _, o := range opts {
		o(&r)
	}
	u := e.srv.URL + r.path
	if len(r.query) > 0 {
		u += "?" + r.query.Encode()
	}
	req, err := http.NewRequest(r.method, u, r.body)
	if err != nil {
		e.t.Fatal(err)
	}
	req.Host = r.host
	req.Header = r.header
	if r.body != nil {
		req.ContentLength = r.contentLength
		if r.header.Get("Content-Type") == "" {
			req.Header.Set("Content-Type", "application/json")
		}
	}
	res, err := e.srv.Client().Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	answer := response{status: res.StatusCode, header: res.Header, body: b}
	e.checkContract(req, r.outsideContract, answer)
	return answer
}

// checkContract fails the test unless the exchange is as docs/openapi.yaml
// says (see contractChecker.check), or the test opted out.
func (e *env) checkContract(sentReq *http.Request, outside string, answer response) {
	e.t.Helper()
	if outside != "" {
		contractStats.optedOut.Add(1)
		return
	}
	c, err := contract()
	if err != nil {
		e.t.Fatal(err)
	}
	req, err := http.NewRequest(sentReq.Method, sentReq.URL.String(), nil)
	if err != nil {
		e.t.Fatal(err)
	}
	req.Host, req.Header = sentReq.Host, sentReq.Header
	if err := c.check(req, answer); err != nil {
		e.t.Error(err)
	}
	contractStats.validated.Add(1)
}

// decode decodes the body into v, failing the test if it is not JSON.
func (r response) decode(t *testing.T, v any) {
	t.Helper()
	if err := json.Unmarshal(r.body, v); err != nil {
		t.Fatalf("answer is not JSON: %v\n%s", err, r.body)
	}
}

// wantStatus fails the test unless the answer has the status.
func (r response) wantStatus(t *testing.T, status int) {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d, want %d; body: %s", r.status, status, r.body)
	}
}

// errorBody is the error body as a client reads it.
type errorBody struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
		Details []struct {
			Field  string `json:"field"`
			Reason string `json:"reason"`
		} `json:"details"`
	} `json:"error"`
}

// wantError fails the test unless the answer is the error body with the
// status and code.
func (r response) wantError(t *testing.T, status int, code string) errorBody {
	t.Helper()
	r.wantStatus(t, status)
	var b errorBody
	r.decode(t, &b)
	if b.Error.Code != code || b.Error.Message == "" {
		t.Fatalf("error body %s, want code %q and a message", r.body, code)
	}
	return b
}

// tokenAnswer is the answer of POST /api/access-tokens/.
type tokenAnswer struct {
	AccessToken struct {
		ID               string     `json:"id"`
		OwnerID          string     `json:"owner_id"`
		Hint             string     `json:"hint"`
		Token            string     `json:"token"`
		TransferredRoles [][]string `json:"transferred_roles"`
	} `json:"access_token"`
}

// userToken creates a token for u with its password.
func (e *env) userToken(u user, h string) string {
	e.t.Helper()
	res := e.do(http.MethodPost, "/api/access-tokens/", host(h), basic(u.Email, password))
	res.wantStatus(e.t, http.StatusOK)
	var a tokenAnswer
	res.decode(e.t, &a)
	return a.AccessToken.Token
}

// createToken creates a token with body, authenticated by token.
func (e *env) createToken(token string, body any) tokenAnswer {
	e.t.Helper()
	res := e.do(http.MethodPost, "/api/access-tokens/", bearer(token), jsonBody(body))
	res.wantStatus(e.t, http.StatusOK)
	var a tokenAnswer
	res.decode(e.t, &a)
	return a
}

// createIntegration creates an integration with the admin's token.
func (e *env) createIntegration(token, name string) string {
	e.t.Helper()
	res := e.do(http.MethodPost, "/api/integrations/", bearer(token),
		jsonBody(map[string]any{"integration_name": "shop", "parameters": map[string]string{"name": name, "description": "the " + name}}))
	res.wantStatus(e.t, http.StatusOK)
	var a struct {
		Integration struct {
			ID string `json:"id"`
		} `json:"integration"`
	}
	res.decode(e.t, &a)
	return a.Integration.ID
}

// golden compares an answer, indented, with ids replaced by names, to
// testdata/name.golden; -update rewrites the file.
func golden(t *testing.T, name string, body []byte, replace ...string) {
	t.Helper()
	var buf bytes.Buffer
	if err := json.Indent(&buf, body, "", "  "); err != nil {
		t.Fatalf("answer is not JSON: %v\n%s", err, body)
	}
	buf.WriteByte('\n')
	got := strings.NewReplacer(replace...).Replace(buf.String())
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("%s mismatch (-want +got):\n%s", path, diff)
	}
}

// runProjections runs the async projectors as the service does, until the
// test ends; waitProjections waits until they have applied the whole log.
func (e *env) runProjections(async ...projections.Projector) {
	e.t.Helper()
	rt, err := projections.NewRuntime(projections.RuntimeConfig{
		Pool: e.pool, Store: e.store, Async: async,
		ConsumerSettings: bus.ConsumerSettings{
			// The store's commits wake the projectors (eventstore.CommitsOf):
			// the poll is only their fallback.
			PollInterval: 500 * time.Millisecond, Logger: slog.New(slog.NewJSONHandler(e.logs, nil)),
		},
	})
	if err != nil {
		e.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- rt.Run(ctx) }()
	e.t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			e.t.Errorf("projections: %v", err)
		}
	})
	e.runtime = rt
}

// waitProjections waits until every async projector has applied every
// event committed so far. It aims at the last event in the table, not at
// the log's head, which stops at the oldest transaction running anywhere
// on the shared test server.
func (e *env) waitProjections() {
	e.t.Helper()
	if e.runtime == nil {
		e.t.Fatal("waitProjections: no projections run; call runProjections first")
	}
	ctx := context.Background()
	var xid string
	var global int64
	if err := e.pool.QueryRow(ctx, `SELECT transaction_id::text, global_position FROM events
		ORDER BY events.transaction_id DESC, events.global_position DESC LIMIT 1`).Scan(&xid, &global); err != nil {
		e.t.Fatal(err)
	}
	// The async projectors' names, once; then one query of their
	// checkpoints a round (Status counts each one's lag too: a dozen
	// queries, every 10 ms, for each waiting test).
	status, err := e.runtime.Status(ctx)
	if err != nil {
		e.t.Fatal(err)
	}
	var names []string
	for _, s := range status {
		if s.Kind == projections.KindAsync {
			names = append(names, s.Name)
		}
	}
	for deadline := time.Now().Add(30 * time.Second); ; {
		var behind []string
		if err := e.pool.QueryRow(ctx, `SELECT coalesce(array_agg(n ORDER BY n), '{}') FROM unnest($1::text[]) n
			WHERE NOT EXISTS (SELECT 1 FROM projection_checkpoints c WHERE c.name = n
				AND (c.transaction_id, c.global_position) >= ($2::text::xid8, $3))`,
			names, xid, global).Scan(&behind); err != nil {
			e.t.Fatal(err)
		}
		if len(behind) == 0 {
			return
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("projection %s did not catch up within 30s", behind[0])
		}
		time.Sleep(10 * time.Millisecond)
	}
}
