package systemtest_test

import (
	"context"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/clientele/clientele/api"
	"github.com/clientele/clientele/app"
	"github.com/clientele/clientele/delivery"
	"github.com/clientele/clientele/eventstore/postgres"
	"github.com/clientele/clientele/internal/pg/pgtest"
	"github.com/clientele/clientele/projections/datasync"
	retrievalproj "github.com/clientele/clientele/projections/retrieval"
)

// withDatasync runs the customers and datasync projectors, as serve does;
// the tests poll, so the rate limit is off.
func withDatasync(t *testing.T) *env {
	e := newEnv(t, func(c *api.Config, _ *app.Application) { c.RateLimit = math.Inf(1) })
	e.runProjections(retrievalproj.NewCustomers(e.keys), datasync.NewDatasync(e.keys, postgres.EventLog{}))
	return e
}

// createDatasync creates a datasync datatarget with the extra settings
// and returns its answer.
func (e *env) createDatasync(token, name string, settings map[string]any) map[string]any {
	e.t.Helper()
	body := map[string]any{"datatarget_type": "datasync", "name": name}
	for k, v := range settings {
		body[k] = v
	}
	res := e.do(http.MethodPost, "/api/datatargets/", bearer(token), jsonBody(body))
	res.wantStatus(e.t, http.StatusOK)
	var a struct {
		Datatarget map[string]any `json:"datatarget"`
	}
	res.decode(e.t, &a)
	return a.Datatarget
}

// syncPage is a retrieved page of a datasync datatarget.
type syncPage struct {
	LastMessageNumber int64 `json:"last_message_number"`
	Messages          []struct {
		UpdateID string         `json:"update_id"`
		Datatype string         `json:"datatype"`
		Data     map[string]any `json:"data"`
	} `json:"messages"`
}

// syncMessages retrieves every message of a datatarget.
func (e *env) syncMessages(token, id string) syncPage {
	e.t.Helper()
	res := e.do(http.MethodGet, "/api/datatargets/"+id+"/retrieve/", bearer(token), withQuery("limit", "10000"))
	res.wantStatus(e.t, http.StatusOK)
	var p syncPage
	res.decode(e.t, &p)
	return p
}

// sink is a webhook receiver that keeps every body it accepts.
type sink struct {
	srv    *httptest.Server
	mu     sync.Mutex
	bodies []json.RawMessage
}

func newSink(t *testing.T) *sink {
	s := &sink{}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		s.bodies = append(s.bodies, b)
		s.mu.Unlock()
	}))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *sink) received() []json.RawMessage {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]json.RawMessage(nil), s.bodies...)
}

// runDeliverer runs webhook delivery (loopback allowed) until the test
// ends.
func (e *env) runDeliverer() {
	e.t.Helper()
	dl, err := delivery.New(delivery.Config{
		Pool: e.pool, Keys: e.keys, Disable: e.cmds.DisableOutlet.BySystem, AllowCIDRs: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")},
		PollInterval: 10 * time.Millisecond, LeaseTTL: time.Second, MinBackoff: 10 * time.Millisecond, MaxBackoff: 20 * time.Millisecond,
	})
	if err != nil {
		e.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = dl.Run(ctx) }()
	e.t.Cleanup(func() { cancel(); <-done })
}

// waitDelivered waits until the outlet has delivered n messages. It
// reads the database: polling the API would meet the rate limit.
func (e *env) waitDelivered(outletID string, n int64) {
	e.t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; {
		var done int64
		err := e.pool.QueryRow(context.Background(), `SELECT coalesce(max(last_delivered_message_number), 0)
			FROM outlet_deliveries WHERE outlet_id = $1`, outletID).Scan(&done)
		if err != nil {
			e.t.Fatal(err)
		}
		if done >= n {
			return
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("outlet %s delivered %d of %d messages", outletID, done, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// createOutlet creates an outlet of the datatarget to url and returns its
// id.
func (e *env) createOutlet(token, datatargetID, url string, batched bool) string {
	e.t.Helper()
	res := e.do(http.MethodPost, "/api/datatargets/"+datatargetID+"/outlets/", bearer(token), jsonBody(map[string]any{
		"outlet_type": "webhook", "is_batched": batched, "request": map[string]any{"url": url, "content": "{(data)}"},
	}))
	res.wantStatus(e.t, http.StatusOK)
	var o outletAnswer
	res.decode(e.t, &o)
	return o.Outlet.ID
}

// customerPositions are the global positions of acme's customer events, as
// update ids, in log order.
func (e *env) customerPositions() []string {
	e.t.Helper()
	return pgtest.EventPositions(e.t, e.pool, "company_id = $1 AND event_type LIKE 'Customer%'", e.acme.ID)
}
