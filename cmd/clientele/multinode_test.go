package main

import (
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/clientele/clientele/internal/natstest"
	"github.com/clientele/clientele/internal/pg/pgtest"
	"github.com/clientele/clientele/internal/testlog"
)

// nodeHelper marks the helper process of TestMultiNodeNATS: a real
// `serve` in a process of its own, which the test may kill with SIGKILL.
const nodeHelper = "CLIENTELE_NODE_HELPER_ARGS"

// TestNodeHelper is not a test: it is a serve process of
// TestMultiNodeNATS.
func TestNodeHelper(t *testing.T) {
	args := os.Getenv(nodeHelper)
	if args == "" {
		t.Skip("helper process of TestMultiNodeNATS")
	}
	err := run(context.Background(), strings.Split(args, "\x1f"), os.Stdout, os.Stderr, os.Getenv)
	t.Fatalf("serve returned: %v", err)
}

// node is a serve process.
type node struct {
	cmd    *exec.Cmd
	out    *testlog.Buffer
	client *outageClient
}

// startNode starts serve in a helper process with the environment vars
// and waits until it listens.
func startNode(t *testing.T, vars map[string]string) *node {
	t.Helper()
	args := []string{"serve", "--addr", "127.0.0.1:0", "--rate-limit", "100000"}
	cmd := exec.Command(os.Args[0], "-test.run=^TestNodeHelper$", "-test.v")
	cmd.Env = append(os.Environ(), nodeHelper+"="+strings.Join(args, "\x1f"))
	for k, v := range vars {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	n := &node{cmd: cmd, out: &testlog.Buffer{}}
	cmd.Stdout, cmd.Stderr = n.out, n.out
	// The node dies with the test process, even one that go test's
	// -timeout ends without running the cleanups: a node left behind
	// would retry its database and NATS for ever.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(n.kill)
	re := regexp.MustCompile(`listening on (http://\S+)`)
	for deadline := time.Now().Add(90 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if m := re.FindStringSubmatch(n.out.String()); m != nil {
			n.client = &outageClient{t: t, base: m[1], host: "acme.localhost"}
			n.client.http.Timeout = 30 * time.Second
			return n
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve did not start:\n%s", n.out.String())
		}
	}
}

// kill ends the process with SIGKILL: nothing of it runs after.
func (n *node) kill() {
	if n.cmd.ProcessState != nil {
		return
	}
	_ = n.cmd.Process.Signal(syscall.SIGKILL)
	_ = n.cmd.Wait()
}

// TestMultiNodeNATS runs three serve processes on one PostgreSQL and one
// NATS JetStream (--bus). Uploads go to every node; while the customers
// are being applied and a webhook outlet delivers, the node that holds
// the outlet's lease is caught applying an import chunk and killed with
// SIGKILL (stopped first, so that the chunk is certainly in its hands,
// and checked still undone after its death). The other two finish its
// work: every import run completes with its counts, every customer is
// in the log and in the read model once, every projector's checkpoint
// reaches the head of the log having counted each event of the log
// once (no commit skipped or applied twice), the receiver gets every
// message in order, from whichever node holds the lease, with at most
// the batch in flight at the kill sent again, and the work went through
// NATS: the streams hold one message per commit and per chunk, and
// their durable consumers, one per projector and one for the import
// worker, were delivered and acked every message.
func TestMultiNodeNATS(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a NATS server and three serve processes")
	}
	start := time.Now()
	nats := natstest.New(t)
	db := pgtest.URL(t)
	vars := map[string]string{
		"DATABASE_URL":       db,
		"CLIENTELE_DATA_DIR": t.TempDir(),
		// A short ack wait: the messages the killed node held come back
		// to the others soon.
		"CLIENTELE_BUS_URL":             nats.URL() + "?ack_wait=3s",
		"CLIENTELE_LOG_LEVEL":           "warn",
		"CLIENTELE_WEBHOOK_ALLOW_CIDRS": "127.0.0.0/8",
	}
	getenv := env(vars)
	mustRun(t, getenv, "company", "create", "acme", "--name", "ACME Oy")
	mustRun(t, getenv, "user", "create", "--company", "acme", "--email", "ops@acme.test", "--password", "correct horse battery", "--role", "admin")
	nodes := make([]*node, 3)
	for i := range nodes {
		// Each node's connections carry its name, so that the test can
		// tell which node's transaction holds an import chunk.
		nv := maps.Clone(vars)
		nv["DATABASE_URL"] = withAppName(db, nodeAppName(i))
		nodes[i] = startNode(t, nv)
	}
	token := nodes[0].client.createToken("ops@acme.test", "correct horse battery")
	for _, n := range nodes {
		n.client.token = token
	}
	t.Logf("three nodes up in %v", time.Since(start).Round(time.Millisecond))

	rcv := newOutageReceiver()
	defer rcv.Close()
	c0 := nodes[0].client
	dt := c0.mustJSON("POST", "/api/datatargets/", `{"datatarget_type":"messages","name":"orders"}`)["datatarget"].(map[string]any)["id"].(string)
	c0.mustJSON("POST", "/api/datatargets/"+dt+"/outlets/", fmt.Sprintf(
		`{"outlet_type":"webhook","is_batched":true,"secret":"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw","request":{"url":%q}}`, rcv.URL))
	// Messages are posted to every node all along (the killed node's
	// poster gets no answers after the kill).
	var posters []*poster
	for _, n := range nodes {
		posters = append(posters, n.client.startPosting(dt))
	}
	defer func() {
		for _, p := range posters {
			p.stop()
		}
	}()

	// Enough for every node to hold chunks when one is killed: the
	// property is of the chunks in flight, not of the size.
	const perRun = 10_000
	var runIDs []string
	for r, n := range nodes {
		res := n.client.call("POST", "/api/customers/upload/", "application/json", customersBody(r*perRun, perRun))
		if res.status != 200 {
			t.Fatalf("upload %d to node %d: %d %s", r, r, res.status, res.body)
		}
		runIDs = append(runIDs, res.json(t)["run_id"].(string))
	}

	// Kill the node that holds the outlet's lease while it applies an
	// import chunk.
	conn, err := pgx.Connect(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	accepted := func(c *outageClient) (int, string) {
		total := 0
		var states []string
		for _, id := range runIDs {
			r := c.importRun(id)
			total += r.accepted
			states = append(states, fmt.Sprintf("%s %d/%d", r.state, r.accepted, r.received))
		}
		return total, strings.Join(states, ", ")
	}
	victim, chunk := killChunkApplier(t, conn, nodes, time.Minute)
	killed := time.Now()
	var alive []*node
	for i, n := range nodes {
		if i != victim {
			alive = append(alive, n)
		}
	}
	c := alive[0].client
	before, _ := accepted(c)
	if before >= perRun*len(nodes) {
		t.Fatal("every customer was applied before the kill; the test proves nothing")
	}
	// Its transaction ends with its connections: the chunk must then
	// still be undone, for the others to apply.
	c.waitFor("the killed node's connections closed", time.Minute, func() (bool, string) {
		var n int
		err := conn.QueryRow(context.Background(), `SELECT count(*) FROM pg_stat_activity WHERE application_name = $1`, nodeAppName(victim)).Scan(&n)
		return err == nil && n == 0, fmt.Sprintf("%d connections, %v", n, err)
	})
	if done, err := chunkDone(context.Background(), conn, chunk); err != nil || done {
		t.Fatalf("chunk %d of run %s, held by node %d when it was killed: applied %v, %v; want undone", chunk.seq, chunk.runID, victim, done, err)
	}
	t.Logf("killed node %d (the lease holder) applying chunk %d of run %s, with %d of %d customers applied, %d webhook requests received",
		victim, chunk.seq, chunk.runID, before, perRun*len(nodes), rcv.requests())

	c.waitFor("every import run completed", 5*time.Minute, func() (bool, string) {
		n, states := accepted(c)
		return n == perRun*len(nodes) && !strings.Contains(states, "scheduled") && !strings.Contains(states, "running"), states
	})
	t.Logf("imports completed %v after the kill", time.Since(killed).Round(time.Millisecond))
	for _, id := range runIDs {
		if r := c.importRun(id); r.state != "completed" || r.accepted != perRun || r.rejected != 0 || r.received != perRun {
			t.Errorf("run %s: %+v, want completed with %d accepted", id, r, perRun)
		}
	}
	// The posts end here: the lag below is measured once nothing more
	// is written.
	for _, p := range posters {
		p.stop()
	}
	c.mustJSON("POST", "/api/datatargets/"+dt+"/post/", `{"messages":[{"after":"kill"}]}`)
	for _, n := range alive {
		n.client.waitFor("projections caught up", 5*time.Minute, func() (bool, string) {
			lags := n.client.projectionLags()
			for _, l := range lags {
				if l != 0 {
					return false, fmt.Sprint(lags)
				}
			}
			return len(lags) > 0, fmt.Sprint(lags)
		})
	}
	t.Logf("projections caught up %v after the kill", time.Since(killed).Round(time.Millisecond))

	// Every commit applied once by every projector.
	checkEventsApplied(t, c, conn)

	// Every customer once in the log and once in the read model.
	var events, streams, rows int
	if err := conn.QueryRow(context.Background(), `SELECT count(*), count(DISTINCT stream_id) FROM events WHERE event_type = 'CustomerUpserted'`).Scan(&events, &streams); err != nil {
		t.Fatal(err)
	}
	if err := conn.QueryRow(context.Background(), `SELECT count(*) FROM customers`).Scan(&rows); err != nil {
		t.Fatal(err)
	}
	if want := perRun * len(nodes); events != want || streams != want || rows != want {
		t.Errorf("the log holds %d CustomerUpserted events of %d customers and the read model %d rows, want %d of each", events, streams, rows, want)
	}

	// Every message delivered, in order, by the lease's next holder.
	total := int(c.mustJSON("GET", "/api/datatargets/"+dt+"/", "")["datatarget"].(map[string]any)["last_message_number"].(float64))
	c.waitFor("every message delivered", 5*time.Minute, func() (bool, string) {
		got := rcv.delivered()
		return got >= total, fmt.Sprintf("%d of %d messages", got, total)
	})
	t.Logf("every message delivered %v after the kill", time.Since(killed).Round(time.Millisecond))
	rcv.check(t, c.queue(dt, total))
	var holder string
	if err := conn.QueryRow(context.Background(), `SELECT lease_holder FROM outlet_deliveries`).Scan(&holder); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(holder, fmt.Sprintf(":%d:", nodes[victim].cmd.Process.Pid)) {
		t.Errorf("the lease is still the killed node's: %s", holder)
	}
	if done, err := chunkDone(context.Background(), conn, chunk); err != nil || !done {
		t.Errorf("chunk %d of run %s, which the killed node held: applied %v, %v", chunk.seq, chunk.runID, done, err)
	}
	// The work went through NATS.
	checkNATSConsumers(t, c, nats.URL(), conn)
	for _, n := range alive {
		for _, line := range strings.Split(n.out.String(), "\n") {
			if strings.Contains(line, `"status":500`) || strings.Contains(line, "panic") {
				t.Errorf("an internal error: %s", line)
			}
		}
	}
	t.Logf("total %v", time.Since(start).Round(time.Millisecond))
}

// TestBusFlag: --bus takes postgres or a NATS URL, and says what it wants
// otherwise.
func TestBusFlag(t *testing.T) {
	t.Parallel()
	getenv := env(map[string]string{"DATABASE_URL": pgtest.URL(t), "CLIENTELE_LOG_LEVEL": "warn"})
	for _, bad := range []string{"kafka://k:9092", "nats://n:4222?ack_wait=soon"} {
		var out, errOut strings.Builder
		err := run(context.Background(), []string{"migrate", "--bus", bad}, &out, &errOut, getenv)
		if err == nil || !strings.Contains(err.Error(), "--bus") {
			t.Errorf("--bus %s: %v, want an error naming --bus", bad, err)
		}
	}
	// A valid URL is not dialled by a subcommand that consumes nothing.
	mustRun(t, getenv, "migrate", "--bus", "nats://127.0.0.1:1")
}
