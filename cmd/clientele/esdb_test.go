package main

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/clientele/clientele/domain/customer"
	"github.com/clientele/clientele/eventstore"
	"github.com/clientele/clientele/eventstore/esdb"
	"github.com/clientele/clientele/eventstore/esdb/esdbtest"
	"github.com/clientele/clientele/internal/pg"
	"github.com/clientele/clientele/internal/pg/pgtest"
)

// TestServeOnEventStoreDB runs the service with its log in EventStoreDB
// (the in-process stand-in, esdbtest): admin commands, serve, an import of
// customers, a datatarget's messages, reads through the projections and
// the customer history, a restart, and more writes after it. The
// PostgreSQL log stays empty; the commit stream holds every commit.
func TestServeOnEventStoreDB(t *testing.T) {
	srv, err := esdbtest.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	dbURL := pgtest.URL(t)
	getenv := env(map[string]string{
		"DATABASE_URL":          dbURL,
		"CLIENTELE_DATA_DIR":    t.TempDir(),
		"CLIENTELE_LOG_LEVEL":   "warn",
		"CLIENTELE_EVENT_STORE": srv.URL(),
	})
	mustRun(t, getenv, "company", "create", "acme", "--name", "ACME Oy")
	mustRun(t, getenv, "user", "create", "--company", "acme", "--email", "ops@acme.test", "--password", "correct horse battery", "--role", "admin")

	base, _, stop := startServe(t, getenv, "--rate-limit", "100000")
	defer stop()
	c := &outageClient{t: t, base: base, host: "acme.localhost", http: http.Client{Timeout: 30 * time.Second}}
	c.token = c.createToken("ops@acme.test", "correct horse battery")

	const n = 2500 // three chunks
	c.upload(customersBody(0, n), n)
	dt := c.mustJSON("POST", "/api/datatargets/", `{"datatarget_type":"messages","name":"orders"}`)["datatarget"].(map[string]any)["id"].(string)
	for i := range 3 {
		c.mustJSON("POST", "/api/datatargets/"+dt+"/post/", fmt.Sprintf(`{"messages":[{"order":%d}]}`, i))
	}
	c.waitProjected(n, dt, 3)
	if got := c.queue(dt, 3); len(got) != 3 || got[2] != `{"order":2}` {
		t.Fatalf("the datatarget's queue: %v", got)
	}
	id := c.retrieveAll()[0]["id"].(string)
	hist := c.mustJSON("GET", "/api/customers/"+id+"/history/", "")
	if evs, _ := hist["events"].([]any); len(evs) != 1 {
		t.Fatalf("the history of %s: %v", id, hist)
	}

	// A restart rebuilds the adapter's index from the commit stream.
	stop()
	base, _, stop = startServe(t, getenv, "--rate-limit", "100000")
	defer stop()
	c.base = base
	c.upload(customersBody(n-10, 20), 20) // ten updates, ten new
	c.waitProjected(n+10, dt, 3)

	// Two nodes write to the one commit stream at once: a node whose index
	// is behind loses the race on its append and retries.
	base2, _, stop2 := startServe(t, getenv, "--rate-limit", "100000")
	defer stop2()
	c2 := *c
	c2.base = base2
	runs := []string{c.startUpload(customersBody(n+10, 1000)), c2.startUpload(customersBody(n+1010, 1000))}
	const posts = 40 // by each node, at once: commands race on the commit stream
	statuses := make([][]int, 2)
	var wg sync.WaitGroup
	for i, cl := range []*outageClient{c, &c2} {
		wg.Go(func() {
			for j := range posts {
				res := cl.call("POST", "/api/datatargets/"+dt+"/post/", "application/json", fmt.Appendf(nil, `{"messages":[{"node":%d,"n":%d}]}`, i, j))
				statuses[i] = append(statuses[i], res.status)
			}
		})
	}
	wg.Wait()
	for i, st := range statuses {
		for _, code := range st {
			if code != 200 {
				t.Fatalf("node %d answered a post %d: %v", i, code, st)
			}
		}
	}
	for _, run := range runs {
		c.waitRun(run, 1000)
	}
	total := n + 10 + 2000
	c2.waitProjected(total, dt, 3+2*posts)

	// Rebuilds read the commit stream: an async read model, and an inline
	// one, whose swap pauses the appends of both nodes (a post on each
	// while it runs must wait for it, not be lost).
	mustRun(t, getenv, "projections", "rebuild", "customers")
	done := make(chan []int, 1)
	go func() {
		var codes []int
		for i, cl := range []*outageClient{c, &c2} {
			codes = append(codes, cl.call("POST", "/api/datatargets/"+dt+"/post/", "application/json", fmt.Appendf(nil, `{"messages":[{"during_rebuild":%d}]}`, i)).status)
		}
		done <- codes
	}()
	mustRun(t, getenv, "projections", "rebuild", "datatargets")
	if codes := <-done; !slices.Equal(codes, []int{200, 200}) {
		t.Fatalf("posts during the rebuild answered %v", codes)
	}
	c2.waitProjected(total, dt, 5+2*posts)
	// Status counts from the commit stream: every projector reaches its
	// head (the async ones after the last posts, in their own time).
	statusRow := regexp.MustCompile(`(?m)^(\w+)\s+(?:inline|async)\s+(\S+)\s+(\S+)\s+(\d+)\s`)
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(500 * time.Millisecond) {
		status := mustRun(t, getenv, "projections", "status")
		rows := statusRow.FindAllStringSubmatch(status, -1)
		if len(rows) < 10 {
			t.Fatalf("projections status printed %q", status)
		}
		var behind []string
		for _, r := range rows {
			if r[2] != r[3] || r[4] != "0" || r[3] == "0:0" {
				behind = append(behind, fmt.Sprintf("projection %s: checkpoint %s, head %s, lag %s", r[1], r[2], r[3], r[4]))
			}
		}
		if len(behind) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 2 minutes, projectors not at the head of the commit stream:\n%s", strings.Join(behind, "\n"))
		}
	}
	stop2()
	stop()

	// The log is in EventStoreDB, none of it in PostgreSQL.
	ctx := context.Background()
	pool, err := pg.Open(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	var inPostgres, prepared int
	if err := pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM events), (SELECT count(*) FROM pg_prepared_xacts WHERE database = current_database())`).Scan(&inPostgres, &prepared); err != nil {
		t.Fatal(err)
	}
	if inPostgres != 0 || prepared != 0 {
		t.Errorf("PostgreSQL holds %d events and %d prepared transactions, want none", inPostgres, prepared)
	}
	store, err := esdb.Open(ctx, srv.URL(), esdb.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	customers := map[string]bool{}
	for after := (eventstore.Position{}); ; {
		page, err := store.ReadLog(ctx, after, 1000)
		if err != nil {
			t.Fatal(err)
		}
		if len(page) == 0 {
			break
		}
		for _, e := range page {
			if e.Type == customer.TypeUpserted {
				customers[e.StreamID] = true
			}
		}
		after = page[len(page)-1].Position
	}
	if len(customers) != total {
		t.Errorf("the commit stream has %d customers, want %d", len(customers), total)
	}

	// EventStoreDB goes away: the node is not ready, a write is answered
	// 503 with Retry-After, reads of the read models go on.
	base, _, stop = startServe(t, getenv, "--rate-limit", "100000")
	defer stop()
	c.base = base
	// Ready once its consumers run, a moment after it listens.
	c.waitFor("readyz with EventStoreDB there", 30*time.Second, func() (bool, string) {
		res := c.call("GET", "/readyz", "", nil)
		return res.status == 200, fmt.Sprintf("%d %s", res.status, res.body)
	})
	srv.Close()
	if res := c.call("GET", "/readyz", "", nil); res.status != 503 {
		t.Errorf("readyz with EventStoreDB away: %d %s", res.status, res.body)
	}
	res := c.call("POST", "/api/datatargets/"+dt+"/post/", "application/json", []byte(`{"messages":[{"away":true}]}`))
	if res.status != 503 || res.header.Get("Retry-After") == "" {
		t.Errorf("a write with EventStoreDB away: %d %s (Retry-After %q), want 503 with Retry-After", res.status, res.body, res.header.Get("Retry-After"))
	}
	if got := c.queueLen(dt); got != 5+2*posts {
		t.Errorf("the queue read with EventStoreDB away: %d messages, want %d", got, 5+2*posts)
	}
	stop()
}

// upload uploads customers as JSON and waits until the run has accepted
// want of them.
func (c *outageClient) upload(body []byte, want int) {
	c.t.Helper()
	c.waitRun(c.startUpload(body), want)
}

// startUpload uploads customers as JSON and returns the run's id.
func (c *outageClient) startUpload(body []byte) string {
	c.t.Helper()
	res := c.call("POST", "/api/customers/upload/", "application/json", body)
	if res.status != 200 {
		c.t.Fatalf("upload: %d %s", res.status, res.body)
	}
	return res.json(c.t)["run_id"].(string)
}

// waitRun waits until the run has accepted want records.
func (c *outageClient) waitRun(run string, want int) {
	c.t.Helper()
	c.waitFor("the import", time.Minute, func() (bool, string) {
		r := c.importRun(run)
		return r.accepted == want, fmt.Sprintf("%+v", r)
	})
}

// waitProjected waits until the customers read model holds customers and
// the datatarget dt's queue messages, and fails if it holds more.
func (c *outageClient) waitProjected(customers int, dt string, messages int) {
	c.t.Helper()
	c.waitFor("the projections", time.Minute, func() (bool, string) {
		got, queued := len(c.retrieveAll()), c.queueLen(dt)
		if got > customers || queued > messages {
			c.t.Fatalf("%d customers and %d messages projected, want %d and %d", got, queued, customers, messages)
		}
		return got == customers && queued == messages, fmt.Sprintf("%d customers, %d messages", got, queued)
	})
}

// queueLen counts the messages of datatarget dt's queue.
func (c *outageClient) queueLen(dt string) int {
	c.t.Helper()
	n := 0
	for {
		page := c.mustJSON("GET", fmt.Sprintf("/api/datatargets/%s/retrieve/?after=%d&limit=10000", dt, n), "")
		msgs, _ := page["messages"].([]any)
		if len(msgs) == 0 {
			return n
		}
		n += len(msgs)
	}
}

// retrieveAll reads every customer, following next_url.
func (c *outageClient) retrieveAll() []map[string]any {
	c.t.Helper()
	var out []map[string]any
	path := "/api/data/customers/"
	for path != "" {
		page := c.mustJSON("GET", path, "")
		for _, v := range page["customers"].([]any) {
			out = append(out, v.(map[string]any))
		}
		path = ""
		if next, _ := page["next_url"].(string); next != "" {
			u, err := url.Parse(next)
			if err != nil {
				c.t.Fatal(err)
			}
			path = u.RequestURI()
		}
	}
	return out
}
