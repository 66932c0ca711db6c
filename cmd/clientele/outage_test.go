package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/clientele/clientele/internal/pg/pgtest"
	"github.com/clientele/clientele/internal/testlog"
)

// TestDatabaseOutage crashes PostgreSQL (pg_ctl stop -m immediate) under a
// running serve while 100,000 customers are being applied and a webhook
// outlet delivers, keeps it down for a while, and starts it again. While
// it is down, serve keeps answering, quickly: readyz and every request
// that needs the database are 503 unavailable with Retry-After. Once it
// is back, serve resumes by itself: every customer is applied exactly
// once, both import runs complete with their counts, the projections
// catch up, and the receiver gets every message in order, with no
// duplicate but a resend of the batch in flight at the crash.
func TestDatabaseOutage(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a private PostgreSQL server and imports 100,000 customers")
	}
	start := time.Now()
	db := pgtest.NewServer(t)
	svc := startOutageService(t, db.URL())
	defer svc.stop()
	c, rcv, dt, poster, logs, exited := svc.c, svc.rcv, svc.dt, svc.poster, svc.logs, svc.exited

	perRun, runs := 50_000, 2
	if raceEnabled {
		perRun = 10_000 // the race detector makes the import about ten times slower
	}
	var runIDs []string
	for r := range runs {
		body := customersBody(r*perRun, perRun)
		res := c.call("POST", "/api/customers/upload/", "application/json", body)
		if res.status != 200 {
			t.Fatalf("upload %d: %d %s", r, res.status, res.body)
		}
		runIDs = append(runIDs, res.json(t)["run_id"].(string))
	}
	t.Logf("set up and uploaded %d customers in %v", perRun*runs, time.Since(start).Round(time.Millisecond))

	// Crash the database while chunks are applied and messages delivered.
	c.waitFor("chunks being applied and messages delivered", time.Minute, func() (bool, string) {
		accepted := 0
		for _, id := range runIDs {
			accepted += c.importRun(id).accepted
		}
		return accepted >= perRun/5 && rcv.requests() > 0, fmt.Sprintf("%d accepted, %d requests received", accepted, rcv.requests())
	})
	// An upload is streaming when the database goes away: its first
	// chunk is staged, the rest of its body comes after the crash.
	streamed, resume := make(chan response, 1), make(chan struct{})
	sent := make(chan struct{})
	body, w := io.Pipe()
	go func() {
		streamed <- c.stream("POST", "/api/customers/upload/", "application/json", body)
	}()
	go func() {
		defer w.Close()
		records := bytes.TrimSuffix(customersBody(perRun*runs, 3000), []byte("]"))
		half := bytes.Index(records, []byte(fmt.Sprintf(`{"external_id":"c-%d"`, perRun*runs+1500)))
		if _, err := w.Write(records[:half]); err != nil {
			return
		}
		close(sent)
		<-resume
		_, _ = w.Write(append(records[half:], ']'))
	}()
	<-sent
	applied := 0
	for _, id := range runIDs {
		applied += c.importRun(id).accepted
	}
	if applied >= perRun*runs {
		t.Fatal("every customer was applied before the database went down; the test proves nothing")
	}
	crashed := time.Now()
	db.Crash()
	t.Logf("crashed PostgreSQL with %d of %d customers applied, %d webhook requests received", applied, perRun*runs, rcv.requests())

	// While it is down, the service answers, quickly, that it is unavailable.
	const bound = 10 * time.Second // an upper bound against hangs, not a speed target
	unavailable := func(what string, res response) {
		t.Helper()
		if res.err != nil || res.status != http.StatusServiceUnavailable || res.elapsed > bound || res.json(t)["error"] == nil {
			t.Errorf("%s during the outage: %d %s after %v (err %v); want 503 within %v", what, res.status, res.body, res.elapsed, res.err, bound)
			return
		}
		if code := res.json(t)["error"].(map[string]any)["code"]; code != "unavailable" {
			t.Errorf("%s during the outage: code %v, want unavailable", what, code)
		}
		if what != "readyz" {
			if s, err := strconv.Atoi(res.header.Get("Retry-After")); err != nil || s <= 0 {
				t.Errorf("%s during the outage: Retry-After %q, want seconds", what, res.header.Get("Retry-After"))
			}
		}
	}
	close(resume)
	resumed := time.Now()
	inFlight := <-streamed
	inFlight.elapsed = time.Since(resumed) // the time it took once the rest of the body came
	unavailable("upload in flight", inFlight)
	unavailable("upload", c.call("POST", "/api/customers/upload/", "application/json", customersBody(perRun*runs, 10)))
	unavailable("customer retrieval", c.call("GET", "/api/data/customers/?limit=10", "", nil))
	unavailable("import run", c.call("GET", "/api/imports/"+runIDs[0]+"/", "", nil))
	unavailable("post messages", c.call("POST", "/api/datatargets/"+dt+"/post/", "application/json", []byte(`{"messages":[{"during":"outage"}]}`)))
	// The outage lasts a while: readyz says so all along.
	probes := 0
	for time.Since(crashed) < 6*time.Second {
		unavailable("readyz", c.call("GET", "/readyz", "", nil))
		probes++
		time.Sleep(250 * time.Millisecond) // the probe interval of a load balancer
	}
	select {
	case err := <-exited:
		t.Fatalf("serve exited during the outage: %v", err)
	default:
	}
	received := rcv.requests()
	db.Start()
	restarted := time.Now()
	t.Logf("PostgreSQL down for %v (%d readyz probes, all 503); restarted", restarted.Sub(crashed).Round(time.Millisecond), probes)

	// It resumes by itself.
	// Deadlines are generous (other tests share the machine); the times
	// are logged.
	c.waitFor("readyz 200", time.Minute, func() (bool, string) {
		res := c.call("GET", "/readyz", "", nil)
		return res.status == 200, fmt.Sprintf("%d %s", res.status, res.body)
	})
	t.Logf("ready %v after the restart", time.Since(restarted).Round(time.Millisecond))
	c.waitFor("imports moving again", time.Minute, func() (bool, string) {
		accepted := 0
		for _, id := range runIDs {
			accepted += c.importRun(id).accepted
		}
		return accepted > applied, fmt.Sprintf("%d accepted, %d before the crash", accepted, applied)
	})
	t.Logf("imports moving again %v after the restart", time.Since(restarted).Round(time.Millisecond))
	c.waitFor("deliveries moving again", time.Minute, func() (bool, string) {
		return rcv.requests() > received, fmt.Sprintf("%d webhook requests, %d before the restart", rcv.requests(), received)
	})
	t.Logf("deliveries moving again %v after the restart", time.Since(restarted).Round(time.Millisecond))
	c.waitFor("every import run completed", 5*time.Minute, func() (bool, string) {
		var states []string
		done := true
		for _, id := range runIDs {
			r := c.importRun(id)
			states = append(states, fmt.Sprintf("%s %d/%d", r.state, r.accepted, r.received))
			done = done && r.state == "completed"
		}
		return done, strings.Join(states, ", ")
	})
	t.Logf("imports completed %v after the restart", time.Since(restarted).Round(time.Millisecond))
	posts := poster.stop() // posted before, during and after the outage
	for _, id := range runIDs {
		if r := c.importRun(id); r.accepted != perRun || r.rejected != 0 || r.received != perRun {
			t.Errorf("run %s: %+v, want %d accepted", id, r, perRun)
		}
	}
	c.waitFor("projections caught up", 5*time.Minute, func() (bool, string) {
		lags := c.projectionLags()
		for _, l := range lags {
			if l != 0 {
				return false, fmt.Sprint(lags)
			}
		}
		return len(lags) > 0, fmt.Sprint(lags)
	})
	t.Logf("projections caught up %v after the restart (%d messages delivered so far)", time.Since(restarted).Round(time.Millisecond), rcv.delivered())

	// Every customer retrievable, once.
	seen := map[string]int{}
	for next := "/api/data/customers/?limit=10000"; next != ""; {
		page := c.mustJSON("GET", next, "")
		for _, cu := range page["customers"].([]any) {
			seen[cu.(map[string]any)["external_id"].(string)]++
		}
		next, _ = page["next_url"].(string)
		next = strings.TrimPrefix(next, "http://acme.localhost")
		if i := strings.Index(next, "/api/"); i > 0 {
			next = next[i:]
		}
	}
	if len(seen) != perRun*runs {
		t.Errorf("%d distinct customers retrievable, want %d", len(seen), perRun*runs)
	}
	for id, n := range seen {
		if n != 1 {
			t.Errorf("customer %s retrieved %d times", id, n)
		}
	}
	// And in the log: one creation per customer, none twice.
	var events, streams int
	conn, err := pgx.Connect(context.Background(), db.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if err := conn.QueryRow(context.Background(), `SELECT count(*), count(DISTINCT stream_id) FROM events WHERE event_type = 'CustomerUpserted'`).Scan(&events, &streams); err != nil {
		t.Fatal(err)
	}
	if events != perRun*runs || streams != perRun*runs {
		t.Errorf("the log holds %d CustomerUpserted events of %d customers, want %d of %d", events, streams, perRun*runs, perRun*runs)
	}

	// The last message is delivered too; then the receiver must have every
	// message, in order.
	c.mustJSON("POST", "/api/datatargets/"+dt+"/post/", `{"messages":[{"after":"outage"}]}`)
	total := int(c.mustJSON("GET", "/api/datatargets/"+dt+"/", "")["datatarget"].(map[string]any)["last_message_number"].(float64))
	c.waitFor("every message delivered", 5*time.Minute, func() (bool, string) {
		got := rcv.delivered()
		return got >= total, fmt.Sprintf("%d of %d messages", got, total)
	})
	t.Logf("every message delivered %v after the restart", time.Since(restarted).Round(time.Millisecond))
	want := c.queue(dt, total)
	rcv.check(t, want)
	if posts[200] == 0 || posts[http.StatusServiceUnavailable] == 0 || len(posts) != 2 {
		t.Errorf("message posts answered %v; want 200s and, during the outage, 503s only", posts)
	}
	t.Logf("posts answered %v; %d messages, %d webhook requests", posts, total, rcv.requests())

	// What the operator saw: the outage said once per consumer, not at
	// every poll, and its end; requests answered 503 as warnings, no
	// internal errors.
	log := logs.String()
	for _, want := range []string{"the subscriber cannot read messages: the database is unavailable", "the subscriber reads messages again",
		`"status":503`, "delivery: the database answers again"} {
		if !strings.Contains(log, want) {
			t.Errorf("the log lacks %q", want)
		}
	}
	perGroup := map[string]int{}
	for _, m := range outageLine.FindAllStringSubmatch(log, -1) {
		perGroup[m[1]]++
	}
	for group, n := range perGroup {
		if n != 1 {
			t.Errorf("consumer group %s logged the outage %d times, want once", group, n)
		}
	}
	logged := map[string]int{}
	for _, line := range strings.Split(log, "\n") {
		if strings.Contains(line, `"status":500`) || strings.Contains(line, "panic") {
			t.Errorf("an internal error: %s", line)
		}
		var l struct{ Level, Msg string }
		if json.Unmarshal([]byte(line), &l) == nil && (l.Level == "WARN" || l.Level == "ERROR") {
			logged[l.Level+" "+l.Msg]++
		}
	}
	t.Logf("warnings and errors logged: %v", logged)
	t.Logf("total %v", time.Since(start).Round(time.Millisecond))
}

var outageLine = regexp.MustCompile(`"msg":"bus: the subscriber cannot read messages[^\n]*"consumer_group":"([^"]+)"`)

// outageService is serve on a database the test takes away, with the
// company acme, an admin's token (c), and a messages datatarget (dt) whose
// batched outlet delivers to rcv, messages posted to it all along by
// poster: before, during and after the outage.
type outageService struct {
	c      *outageClient
	rcv    *outageReceiver
	dt     string
	poster *poster
	logs   *testlog.Buffer
	exited <-chan error
	stop   func()
}

// startOutageService starts an outageService on databaseURL; stop ends it
// all.
func startOutageService(t *testing.T, databaseURL string) *outageService {
	t.Helper()
	getenv := env(map[string]string{
		"DATABASE_URL":                  databaseURL,
		"CLIENTELE_DATA_DIR":            t.TempDir(),
		"CLIENTELE_LOG_LEVEL":           "info",
		"CLIENTELE_WEBHOOK_ALLOW_CIDRS": "127.0.0.0/8",
	})
	mustRun(t, getenv, "company", "create", "acme", "--name", "ACME Oy")
	mustRun(t, getenv, "user", "create", "--company", "acme", "--email", "ops@acme.test", "--password", "correct horse battery", "--role", "admin")
	base, logs, exited, stop := serveForOutage(t, getenv, "--rate-limit", "100000")
	c := &outageClient{t: t, base: base, host: "acme.localhost", http: http.Client{Timeout: 30 * time.Second}}
	c.token = c.createToken("ops@acme.test", "correct horse battery")
	rcv := newOutageReceiver()
	dt := c.mustJSON("POST", "/api/datatargets/", `{"datatarget_type":"messages","name":"orders"}`)["datatarget"].(map[string]any)["id"].(string)
	c.mustJSON("POST", "/api/datatargets/"+dt+"/outlets/", fmt.Sprintf(
		`{"outlet_type":"webhook","is_batched":true,"secret":"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw","request":{"url":%q}}`, rcv.URL))
	p := c.startPosting(dt)
	return &outageService{c: c, rcv: rcv, dt: dt, poster: p, logs: logs, exited: exited, stop: func() {
		p.stop()
		stop()
		rcv.Close()
	}}
}

// serveForOutage runs serve in the background like startServe, and also
// returns its log and a channel that receives its error if it exits: it
// must not, whatever happens to its database.
func serveForOutage(t *testing.T, getenv func(string) string, args ...string) (base string, logs *testlog.Buffer, exited <-chan error, stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	out, errOut := &testlog.Buffer{}, &testlog.Buffer{}
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, append([]string{"serve", "--addr", "127.0.0.1:0"}, args...), out, errOut, getenv)
	}()
	re := regexp.MustCompile(`listening on (http://\S+)`)
	for deadline := time.Now().Add(90 * time.Second); ; {
		if m := re.FindStringSubmatch(out.String()); m != nil {
			base = m[1]
			break
		}
		select {
		case err := <-done:
			cancel()
			t.Fatalf("serve exited: %v\n%s", err, errOut.String())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			cancel()
			t.Fatalf("serve did not start\n%s", errOut.String())
		}
	}
	var once sync.Once
	return base, errOut, done, func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("serve: %v", err)
				}
			case <-time.After(60 * time.Second):
				t.Errorf("serve did not stop within 60s")
			}
		})
	}
}

// customersBody is a JSON list of n customers numbered from first.
func customersBody(first, n int) []byte {
	var b bytes.Buffer
	b.WriteByte('[')
	for i := first; i < first+n; i++ {
		if i > first {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"external_id":"c-%d","email":"customer%d@example.com","first_name":"Aino","tags":["outage"]}`, i, i)
	}
	b.WriteByte(']')
	return b.Bytes()
}

// outageClient calls serve over HTTP with a timeout, so that a request
// that hangs fails the test instead of blocking it.
type outageClient struct {
	t          *testing.T
	base, host string
	token      string
	http       http.Client
}

type response struct {
	status  int
	header  http.Header
	body    []byte
	elapsed time.Duration
	err     error
}

func (r response) json(t *testing.T) map[string]any {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal(r.body, &v); err != nil {
		t.Fatalf("answer %d %q: %v", r.status, r.body, err)
	}
	return v
}

func (c *outageClient) call(method, path, contentType string, body []byte) response {
	return c.stream(method, path, contentType, bytes.NewReader(body))
}

// stream makes a request whose body is read from body as it comes.
func (c *outageClient) stream(method, path, contentType string, body io.Reader) response {
	req, err := http.NewRequest(method, c.base+path, body)
	if err != nil {
		return response{err: err}
	}
	req.Host = c.host
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	start := time.Now()
	resp, err := c.http.Do(req)
	if err != nil {
		return response{err: err, elapsed: time.Since(start)}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return response{status: resp.StatusCode, header: resp.Header, body: b, elapsed: time.Since(start), err: err}
}

// mustJSON makes a request that must succeed and returns its answer.
func (c *outageClient) mustJSON(method, path, body string) map[string]any {
	c.t.Helper()
	ct := ""
	if body != "" {
		ct = "application/json"
	}
	res := c.call(method, path, ct, []byte(body))
	if res.err != nil || res.status != 200 {
		c.t.Fatalf("%s %s: %d %s %v", method, path, res.status, res.body, res.err)
	}
	return res.json(c.t)
}

func (c *outageClient) createToken(email, password string) string {
	c.t.Helper()
	req, _ := http.NewRequest("POST", c.base+"/api/access-tokens/", nil)
	req.Host = c.host
	req.SetBasicAuth(email, password)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	var v struct {
		AccessToken struct{ Token string } `json:"access_token"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil || v.AccessToken.Token == "" {
		c.t.Fatalf("create token: %d %v", resp.StatusCode, err)
	}
	return v.AccessToken.Token
}

type importRun struct {
	state                        string
	received, accepted, rejected int
}

// importRun reads a run; an answer other than 200 reads as no progress.
func (c *outageClient) importRun(id string) importRun {
	res := c.call("GET", "/api/imports/"+id+"/", "", nil)
	if res.status != 200 {
		return importRun{state: fmt.Sprintf("answered %d", res.status)}
	}
	var v struct {
		Import struct {
			State                        string
			Received, Accepted, Rejected int
		}
	}
	if err := json.Unmarshal(res.body, &v); err != nil {
		c.t.Fatal(err)
	}
	return importRun{v.Import.State, v.Import.Received, v.Import.Accepted, v.Import.Rejected}
}

var lagLine = regexp.MustCompile(`(?m)^clientele_projection_lag_events\{projection="([^"]+)"\} (\S+)$`)

// projectionLags reads every projection's lag from /metrics.
func (c *outageClient) projectionLags() map[string]float64 {
	res := c.call("GET", "/metrics", "", nil)
	out := map[string]float64{}
	for _, m := range lagLine.FindAllStringSubmatch(string(res.body), -1) {
		v, _ := strconv.ParseFloat(m[2], 64)
		out[m[1]] = v
	}
	return out
}

// queue reads the datatarget's messages 1..total, compacted.
func (c *outageClient) queue(dt string, total int) []string {
	c.t.Helper()
	var out []string
	for len(out) < total {
		page := c.mustJSON("GET", fmt.Sprintf("/api/datatargets/%s/retrieve/?after=%d&limit=10000", dt, len(out)), "")
		msgs, _ := page["messages"].([]any)
		if len(msgs) == 0 {
			c.t.Fatalf("the queue ends at %d of %d messages", len(out), total)
		}
		for _, m := range msgs {
			out = append(out, canonical(m))
		}
	}
	return out
}

// waitFor polls cond until it holds, failing the test after timeout with
// cond's last description of where things stand.
func (c *outageClient) waitFor(what string, timeout time.Duration, cond func() (bool, string)) {
	c.t.Helper()
	start := time.Now()
	report := start.Add(15 * time.Second)
	for {
		ok, state := cond()
		if ok {
			return
		}
		if time.Since(start) > timeout {
			c.t.Fatalf("waited %v for %s: %s", timeout, what, state)
		}
		if time.Now().After(report) {
			c.t.Logf("waiting %v for %s: %s", time.Since(start).Round(time.Second), what, state)
			report = report.Add(15 * time.Second)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// poster posts small batches of messages to a datatarget until stopped,
// and counts the answers by status.
type poster struct {
	done    chan struct{}
	stopped chan struct{}
	once    sync.Once
	mu      sync.Mutex
	answers map[int]int
}

func (c *outageClient) startPosting(dt string) *poster {
	p := &poster{done: make(chan struct{}), stopped: make(chan struct{}), answers: map[int]int{}}
	go func() {
		defer close(p.stopped)
		for i := 0; ; i++ {
			select {
			case <-p.done:
				return
			case <-time.After(100 * time.Millisecond):
			}
			res := c.call("POST", "/api/datatargets/"+dt+"/post/", "application/json",
				fmt.Appendf(nil, `{"messages":[{"post":%d,"i":0},{"post":%d,"i":1},{"post":%d,"i":2}]}`, i, i, i))
			status := res.status
			if res.err != nil || res.elapsed > 10*time.Second {
				status = -1 // no answer, or too late
			}
			p.mu.Lock()
			p.answers[status]++
			p.mu.Unlock()
		}
	}()
	return p
}

// stop stops posting and returns the answers by status.
func (p *poster) stop() map[int]int {
	p.once.Do(func() { close(p.done) })
	<-p.stopped
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.answers
}

// outageReceiver is a webhook receiver that keeps every request's
// webhook-id and messages, in arrival order.
type outageReceiver struct {
	*httptest.Server
	mu   sync.Mutex
	reqs []receivedBatch
}

type receivedBatch struct {
	id          string // msg_<outlet>_<first>_<size>
	first, size int
	messages    []string
}

// canonical is a decoded message as JSON with sorted keys: the queue
// does not promise the key order of a message.
func canonical(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

var webhookID = regexp.MustCompile(`^msg_[^_]+_(\d+)_(\d+)$`)

func newOutageReceiver() *outageReceiver {
	r := &outageReceiver{}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		var msgs []json.RawMessage
		if err := json.NewDecoder(req.Body).Decode(&msgs); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		b := receivedBatch{id: req.Header.Get("webhook-id")}
		if m := webhookID.FindStringSubmatch(b.id); m != nil {
			b.first, _ = strconv.Atoi(m[1])
			b.size, _ = strconv.Atoi(m[2])
		}
		for _, m := range msgs {
			var v any
			_ = json.Unmarshal(m, &v)
			b.messages = append(b.messages, canonical(v))
		}
		r.mu.Lock()
		r.reqs = append(r.reqs, b)
		r.mu.Unlock()
	}))
	return r
}

func (r *outageReceiver) requests() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.reqs)
}

// delivered is the highest message number received with all before it.
func (r *outageReceiver) delivered() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	next := 1
	for _, b := range r.reqs {
		if b.first <= next {
			next = max(next, b.first+len(b.messages))
		}
	}
	return next - 1
}

// check verifies what delivery promises: every message, in
// order, each batch starting right after the one before, except that the
// batch in flight when the database went away may be sent again (from the
// same first message; with the same webhook-id unless its first attempt
// was the lost one, when the successor may form a larger batch).
func (r *outageReceiver) check(t *testing.T, want []string) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	next, resends := 1, 0
	prev := receivedBatch{}
	for i, b := range r.reqs {
		if b.size != len(b.messages) || b.first < 1 {
			t.Fatalf("request %d: webhook-id %q with %d messages", i, b.id, len(b.messages))
		}
		switch {
		case b.first == next:
		case i > 0 && b.first == prev.first:
			resends++
		default:
			t.Fatalf("request %d (%s) starts at message %d; want %d (or %d again, the batch in flight)", i, b.id, b.first, next, prev.first)
		}
		for j, m := range b.messages {
			if n := b.first + j; n > len(want) || m != want[n-1] {
				t.Fatalf("request %d: message %d is %s; the queue has %s", i, n, m, want[min(n, len(want))-1])
			}
		}
		next = b.first + len(b.messages)
		prev = b
	}
	if next-1 != len(want) {
		t.Errorf("received messages up to %d, want %d", next-1, len(want))
	}
	// One crash, one batch in flight at most.
	if resends > 1 {
		t.Errorf("%d batches sent again; only the one in flight at the crash may be", resends)
	}
}
