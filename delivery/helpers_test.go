package delivery_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/clientele/clientele/commands"
	"github.com/clientele/clientele/delivery"
	"github.com/clientele/clientele/domain/access"
	"github.com/clientele/clientele/domain/company"
	"github.com/clientele/clientele/domain/datatarget"
	"github.com/clientele/clientele/eventstore/postgres"
	"github.com/clientele/clientele/internal/crypto"
	"github.com/clientele/clientele/internal/pg/pgtest"
	"github.com/clientele/clientele/projections/projectors"
	"github.com/clientele/clientele/readmodels"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// harness is a database with a company and a messages datatarget, and
// the commands on it.
type harness struct {
	t    *testing.T
	url  string
	pool *pgxpool.Pool
	cmds commands.Commands
	p    access.Principal
	dt   datatarget.Datatarget
	next int // number of the next message posted
}

// testMasterKey is the master key of the package's tests: one fixed key,
// so that what a helper process logs opens in its parent.
var testMasterKey = bytes.Repeat([]byte{0x3d}, crypto.KeySize)

// testKeys returns the keys of the package's tests.
func testKeys(tb testing.TB) crypto.KeyStore {
	tb.Helper()
	kr, err := crypto.NewKeyring(testMasterKey)
	if err != nil {
		tb.Fatal(err)
	}
	return crypto.KeyStore{Keyring: kr}
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	ctx := context.Background()
	h := &harness{t: t, url: pgtest.URL(t), next: 1}
	pool, err := pgxpool.New(ctx, h.url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	h.pool = pool
	store := postgres.New(pool, projectors.InlineHook())
	h.cmds = commands.New(store, time.Now, commands.WithSealer(testKeys(t).Keyring))
	co, err := h.cmds.CreateCompany.Handle(ctx, commands.CreateCompany{Principal: access.System(""), Slug: "acme", Settings: company.Settings{Name: "Acme"}})
	if err != nil {
		t.Fatal(err)
	}
	h.p = access.System(co.ID)
	if h.dt, err = h.cmds.CreateDatatarget.Handle(ctx, commands.CreateDatatarget{Principal: h.p, Type: datatarget.Messages, Name: "orders"}); err != nil {
		t.Fatal(err)
	}
	return h
}

// outlet creates an outlet of the datatarget to url; its content puts the
// data under "items".
func (h *harness) outlet(url string, batched bool, configure ...func(*datatarget.OutletSpec)) datatarget.Outlet {
	h.t.Helper()
	spec := datatarget.OutletSpec{Type: "webhook", IsBatched: batched, Request: datatarget.Request{
		URL: url, Method: "POST", Headers: map[string]string{"X-Api-Key": "k1"}, Content: json.RawMessage(`{"source": "clientele", "items": "{(data)}"}`),
	}}
	for _, f := range configure {
		f(&spec)
	}
	o, err := h.cmds.CreateOutlet.Handle(context.Background(), commands.CreateOutlet{Principal: h.p, DatatargetID: h.dt.ID, Spec: spec})
	if err != nil {
		h.t.Fatal(err)
	}
	return o
}

// change changes the outlet as an admin would.
func (h *harness) change(outletID string, patch datatarget.OutletPatch) {
	h.t.Helper()
	if err := h.cmds.ChangeOutlet.Handle(context.Background(), commands.ChangeOutlet{Principal: h.p, DatatargetID: h.dt.ID, OutletID: outletID, Patch: patch}); err != nil {
		h.t.Fatal(err)
	}
}

// post posts n messages {"n": <number>} in posts of up to 1,000.
func (h *harness) post(n int) {
	h.t.Helper()
	for n > 0 {
		k := min(n, 1000)
		msgs := make([]json.RawMessage, k)
		for i := range msgs {
			msgs[i] = json.RawMessage(fmt.Sprintf(`{"n":%d}`, h.next+i))
		}
		got, err := h.cmds.PostDatatargetMessages.Handle(context.Background(), commands.PostDatatargetMessages{Principal: h.p, DatatargetID: h.dt.ID, Messages: msgs})
		if err != nil || got.FirstMessageNumber != int64(h.next) {
			h.t.Fatalf("post: %+v %v (expected first %d)", got, err, h.next)
		}
		h.next += k
		n -= k
	}
}

// config is a fast configuration for tests: loopback allowed, short
// polls, leases, timeouts and backoffs.
func (h *harness) config(configure ...func(*delivery.Config)) delivery.Config {
	cfg := delivery.Config{
		Pool: h.pool, Keys: testKeys(h.t), Disable: h.cmds.DisableOutlet.BySystem,
		AllowCIDRs:   []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")},
		PollInterval: 10 * time.Millisecond, LeaseTTL: time.Second, RequestTimeout: 2 * time.Second,
		MinBackoff: 10 * time.Millisecond, MaxBackoff: 40 * time.Millisecond,
	}
	for _, f := range configure {
		f(&cfg)
	}
	return cfg
}

// run starts a Deliverer until the test ends, or until the returned stop
// is called (which waits for it).
func (h *harness) run(cfg delivery.Config) (stop func()) {
	h.t.Helper()
	d, err := delivery.New(cfg)
	if err != nil {
		h.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := d.Run(ctx); err != nil {
			h.t.Errorf("run: %v", err)
		}
	}()
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); <-done }) }
	h.t.Cleanup(stop)
	return stop
}

// outletState reads the outlet as the API shows it.
func (h *harness) outletState(id string) datatarget.Outlet {
	h.t.Helper()
	o, err := readmodels.NewDatatargets(h.pool, testKeys(h.t)).Outlet(context.Background(), h.p.CompanyID, h.dt.ID, id)
	if err != nil {
		h.t.Fatal(err)
	}
	return o
}

// entries reads every log entry of the outlet, oldest first, with the raw
// request and reply.
func (h *harness) entries(id string) []datatarget.LogEntry {
	h.t.Helper()
	q := readmodels.NewDatatargets(h.pool, testKeys(h.t))
	page, err := q.Log(context.Background(), readmodels.LogQuery{CompanyID: h.p.CompanyID, DatatargetID: h.dt.ID, OutletID: id, Limit: readmodels.MaxLogLimit})
	if err != nil {
		h.t.Fatal(err)
	}
	out := make([]datatarget.LogEntry, 0, len(page.Entries))
	for _, e := range page.Entries {
		full, err := q.LogEntry(context.Background(), h.p.CompanyID, h.dt.ID, id, e.EntryNumber)
		if err != nil {
			h.t.Fatal(err)
		}
		out = append(out, full)
	}
	return out
}

func waitFor(t *testing.T, timeout time.Duration, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
