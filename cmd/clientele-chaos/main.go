// Command clientele-chaos runs Clientele on several nodes under faults at
// random and checks, from the history of what its clients were told and
// the final reads, that the service kept its promises (make chaos; see
// docs/operations.md, "Faults at random: make chaos").
//
// It starts PostgreSQL as a primary and a synchronous standby, a NATS
// JetStream cluster of three servers (streams with three replicas), three
// serve processes of the built binary, each reaching every server through
// a fault-injecting TCP proxy of its own (toxiproxy, in this process), a
// webhook receiver that fails and stalls some requests, and concurrent
// clients (uploads of customers, events and sales; message posts; reads)
// for -duration, while it kills a node, kills a NATS server, fails
// PostgreSQL over to the standby, cuts a node off from PostgreSQL, NATS
// or both, and adds latency, resets or timeouts to one link, at seeded
// times. At the end it reads the data back, the datasync queues, outlet
// logs, changes feed and an export, and rebuilds every read model to
// compare it with the live one. It prints one line per invariant and "N
// passed, M failed", and keeps the run folder (history.jsonl, the nodes'
// logs, the seed) of a failing run.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func main() {
	code, err := run()
	if err != nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
		os.Exit(2)
	}
	os.Exit(code)
}

func run() (int, error) {
	var o options
	flag.DurationVar(&o.duration, "duration", envDuration("CHAOS_DURATION", 10*time.Minute), "how long the workload runs (env CHAOS_DURATION)")
	flag.Uint64Var(&o.seed, "seed", envSeed("CHAOS_SEED"), "seed of the fault schedule and the workload (env CHAOS_SEED; default: from the clock)")
	flag.StringVar(&o.bin, "bin", "bin/clientele", "the clientele binary to run (make chaos builds it)")
	flag.StringVar(&o.root, "dir", os.TempDir(), "where to make the run folder")
	flag.BoolVar(&o.keep, "keep", false, "keep the run folder of a passing run too")
	flag.Parse()
	return runChaos(o)
}

// options are a run's: its workload's duration, the seed of its faults
// and workload, the binary it runs, where its folder goes, and whether a
// passing run's folder is kept.
type options struct {
	duration time.Duration
	seed     uint64
	bin      string
	root     string
	keep     bool
}

// runChaos runs the harness once and returns the exit code: 0 when every
// check passed, 1 when one failed (its run folder kept).
func runChaos(o options) (int, error) {
	binPath, err := filepath.Abs(o.bin)
	if err != nil {
		return 0, err
	}
	if _, err := os.Stat(binPath); err != nil {
		return 0, fmt.Errorf("no binary at %s: build it first (go build -o %s ./cmd/clientele)", binPath, o.bin)
	}
	dir := filepath.Join(o.root, fmt.Sprintf("clientele-chaos-%d-%s", o.seed, time.Now().UTC().Format("20060102T150405")))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return 0, err
	}
	// The PostgreSQL servers run as an unprivileged user, who must enter it.
	if err := os.Chmod(dir, 0o755); err != nil {
		return 0, err
	}
	logf := func(format string, args ...any) {
		fmt.Printf("%s "+format+"\n", append([]any{time.Now().UTC().Format("15:04:05.000")}, args...)...)
	}
	logf("seed %d, duration %v, run folder %s", o.seed, o.duration, dir)
	_ = os.WriteFile(filepath.Join(dir, "seed"), []byte(fmt.Sprintf("CHAOS_SEED=%d CHAOS_DURATION=%v\n", o.seed, o.duration)), 0o644)

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	setupCtx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	c, err := startCluster(setupCtx, binPath, dir, 3)
	cancel()
	defer c.close()
	if err != nil {
		return 0, fmt.Errorf("setup (run folder %s): %w", dir, err)
	}
	logf("PostgreSQL primary and standby, %d NATS servers and 3 nodes up: %s", natsServers, strings.Join(c.bases(), " "))

	rcv := newReceiver(o.seed, func(remote, local string) string { return socketOwner(remote, local, c.pids()) })
	defer rcv.Close()
	base := c.bases()[0]
	token, err := createToken(base)
	if err != nil {
		return 0, err
	}
	a := &api{token: token}
	a.http.Timeout = requestTimeout
	dts, err := setupTargets(a, base, rcv.URL)
	if err != nil {
		return 0, err
	}
	hist, err := newHistory(filepath.Join(dir, "history.jsonl"))
	if err != nil {
		return 0, err
	}
	defer hist.close()

	faults := schedule(o.seed, o.duration)
	for _, f := range faults {
		logf("planned: %s at %v (down %v, node %d %s %s)", f.Kind, f.At.Round(time.Millisecond), f.Down, f.Node, f.Link, f.Attrs)
	}
	w := &workload{c: c, api: a, hist: hist, dt: dts.messages, seed: o.seed}
	start := time.Now()
	runCtx, cancelRun := context.WithTimeout(ctx, o.duration)
	defer cancelRun()
	injected := make(chan error, 1)
	go func() { injected <- inject(runCtx, c, hist, faults, start, logf) }()
	w.run(runCtx)
	if err := <-injected; err != nil {
		return 0, fmt.Errorf("%w (run folder %s)", err, dir)
	}
	if ctx.Err() != nil {
		return 0, errors.New("interrupted")
	}
	logf("workload stopped: %d requests; settling", len(hist.all()))

	entries := hist.all()
	fin, err := settle(ctx, a, c, rcv, dts, entries, logf)
	if err != nil {
		logf("did not settle: %v", err)
	}
	results := check(entries, fin)
	passed, failed := 0, 0
	for _, r := range results {
		verdict := "PASS"
		if r.ok {
			passed++
		} else {
			verdict = "FAIL"
			failed++
		}
		fmt.Printf("%s %s", verdict, r.name)
		if r.detail != "" {
			fmt.Printf(" (%s)", r.detail)
		}
		fmt.Println()
		for _, p := range r.problems {
			fmt.Println("     ", p)
		}
	}
	ws := windowsOf(entries)
	for _, kind := range slices.Sorted(maps.Keys(ws)) {
		fmt.Printf("longest 503 window, %s: %v\n", kind, ws[kind])
	}
	fmt.Printf("receiver: %d requests refused (500), %d answered slowly\n", rcv.failed, rcv.slow)
	fmt.Printf("%d passed, %d failed\n", passed, failed)
	if failed > 0 || err != nil {
		fmt.Printf("kept the run folder %s (CHAOS_SEED=%d)\n", dir, o.seed)
		return 1, nil
	}
	if !o.keep {
		c.close()
		_ = os.RemoveAll(dir)
	}
	return 0, nil
}

// targets are the run's datatargets: a messages datatarget with a
// batched and an unbatched webhook outlet, and a datasync datatarget of
// customers, of events and of sales, each with a batched outlet; every
// outlet delivers to the receiver at a path of its own.
type targets struct {
	messages string            // the messages datatarget's id
	byPath   map[string]outlet // every outlet, by the receiver's path
}

type outlet struct{ datatarget, id string }

// syncPaths are the receiver's paths of the datasync outlets, by
// datatype.
var syncPaths = map[string]string{"customers": "/sync-customers", "events": "/sync-events", "sales": "/sync-sales"}

// setupTargets makes the run's datatargets and outlets.
func setupTargets(a *api, base, rcvURL string) (targets, error) {
	t := targets{byPath: map[string]outlet{}}
	create := func(body string) (string, error) {
		e := a.call(base, "POST", "/api/datatargets/", []byte(body))
		var v struct{ Datatarget struct{ ID string } }
		if e.Status != 200 || json.Unmarshal(e.Answer, &v) != nil {
			return "", fmt.Errorf("create datatarget: %d %s %s", e.Status, e.Answer, e.Err)
		}
		return v.Datatarget.ID, nil
	}
	addOutlet := func(dt, path string, batched bool) error {
		body := fmt.Sprintf(`{"outlet_type":"webhook","is_batched":%v,"secret":"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw","request":{"url":%q}}`, batched, rcvURL+path)
		e := a.call(base, "POST", "/api/datatargets/"+dt+"/outlets/", []byte(body))
		var v struct{ Outlet struct{ ID string } }
		if e.Status != 200 || json.Unmarshal(e.Answer, &v) != nil {
			return fmt.Errorf("create outlet: %d %s %s", e.Status, e.Answer, e.Err)
		}
		t.byPath[path] = outlet{datatarget: dt, id: v.Outlet.ID}
		return nil
	}
	var err error
	if t.messages, err = create(`{"datatarget_type":"messages","name":"orders"}`); err != nil {
		return t, err
	}
	for _, o := range []struct {
		path    string
		batched bool
	}{{"/batched", true}, {"/single", false}} {
		if err := addOutlet(t.messages, o.path, o.batched); err != nil {
			return t, err
		}
	}
	for _, datatype := range slices.Sorted(maps.Keys(syncPaths)) {
		dt, err := create(fmt.Sprintf(`{"datatarget_type":"datasync","name":"sync %s","datatype":%q}`, datatype, datatype))
		if err != nil {
			return t, err
		}
		if err := addOutlet(dt, syncPaths[datatype], true); err != nil {
			return t, err
		}
	}
	return t, nil
}

// lastMessage reads a datatarget's last_message_number.
func lastMessage(a *api, base, dt string) (int, bool) {
	e := a.call(base, "GET", "/api/datatargets/"+dt+"/", nil)
	var v struct {
		Datatarget struct {
			Last int `json:"last_message_number"`
		}
	}
	if e.Status != 200 || json.Unmarshal(e.Answer, &v) != nil {
		return 0, false
	}
	return v.Datatarget.Last, true
}

// outletDelivered reads an outlet's last_delivered_message_number.
func outletDelivered(a *api, base string, o outlet) (int, bool) {
	e := a.call(base, "GET", "/api/datatargets/"+o.datatarget+"/outlets/"+o.id+"/", nil)
	var v struct {
		Outlet struct {
			Delivered int `json:"last_delivered_message_number"`
		}
	}
	if e.Status != 200 || json.Unmarshal(e.Answer, &v) != nil {
		return 0, false
	}
	return v.Outlet.Delivered, true
}

// settle waits, up to 5 minutes, until every acknowledged run has ended
// and both outlets delivered every message, then reads the final state.
func settle(ctx context.Context, a *api, c *cluster, rcv *receiver, dts targets, entries []entry, logf func(string, ...any)) (finalState, error) {
	fin := finalState{runs: map[string]importRun{}, customers: map[string]customerView{}, batches: map[string][]batch{}, logs: map[string]string{},
		attempts:  map[string][]attempt{},
		documents: map[string]string{}, problems: map[string][]string{}}
	var runIDs []string
	for _, e := range entries {
		if isUpload(e.Op) && e.Status == 200 {
			var ans struct {
				RunID string `json:"run_id"`
			}
			_ = json.Unmarshal(e.Answer, &ans)
			runIDs = append(runIDs, ans.RunID)
		}
	}
	start := time.Now()
	report := start.Add(15 * time.Second)
	var state string
	for {
		if ctx.Err() != nil {
			return fin, ctx.Err()
		}
		base := c.bases()[0]
		open := 0
		for _, id := range runIDs {
			if r, ok := fin.runs[id]; ok && (r.State == "completed" || r.State == "failed") {
				continue
			}
			e := a.call(base, "GET", "/api/imports/"+id+"/", nil)
			var v struct{ Import importRun }
			if e.Status == 200 && json.Unmarshal(e.Answer, &v) == nil {
				fin.runs[id] = v.Import
			}
			if r := fin.runs[id]; r.State != "completed" && r.State != "failed" {
				open++
			}
		}
		// Every outlet delivered its datatarget's last message.
		read, behind := true, 0
		var progress []string
		for _, path := range slices.Sorted(maps.Keys(dts.byPath)) {
			last, ok := lastMessage(a, base, dts.byPath[path].datatarget)
			read = read && ok
			if path == "/batched" && ok {
				fin.lastNum = last
			}
			// The outlet's progress is written with the log entry of the
			// attempt that made it: past it, the log has every entry the
			// receiver's requests may need (checkAttempts).
			got := rcv.delivered(path)
			recorded, ok := outletDelivered(a, base, dts.byPath[path])
			read = read && ok
			if got < last || recorded < last {
				behind++
			}
			progress = append(progress, fmt.Sprintf("%s %d of %d (recorded %d)", path, got, last, recorded))
		}
		state = fmt.Sprintf("%d of %d runs open; delivered %s", open, len(runIDs), strings.Join(progress, ", "))
		if read && open == 0 && behind == 0 {
			break
		}
		if time.Now().After(report) {
			logf("settling: %s", state)
			report = report.Add(15 * time.Second)
		}
		if time.Since(start) > 5*time.Minute {
			return readFinal(ctx, a, c, rcv, dts, fin), errors.New(state)
		}
		time.Sleep(500 * time.Millisecond)
	}
	logf("settled in %v: %s", time.Since(start).Round(time.Millisecond), state)
	for {
		rows, err := projectionStatus(ctx, c)
		lagging := err != nil
		for _, r := range rows {
			lagging = lagging || r.lag != 0
		}
		if !lagging {
			fin.projections = rows
			break
		}
		if time.Since(start) > 5*time.Minute {
			return readFinal(ctx, a, c, rcv, dts, fin), fmt.Errorf("projections still lag: %+v %v", rows, err)
		}
		time.Sleep(time.Second)
	}
	return readFinal(ctx, a, c, rcv, dts, fin), nil
}

// readFinal reads the customers, events and sales, the queues, the
// receiver and the logs, then what the forget checks search (the
// datasync queues, the outlet logs, the changes feed, the export), and
// rebuilds every read model to compare it with the live one.
func readFinal(ctx context.Context, a *api, c *cluster, rcv *receiver, dts targets, fin finalState) finalState {
	base := c.bases()[0]
	dt := dts.messages
	readPages(a, base, "/api/data/customers/?limit=1000", "customers", func(raw json.RawMessage) {
		var cv customerView
		var flags struct {
			IsForgotten bool `json:"is_forgotten"`
		}
		_ = json.Unmarshal(raw, &cv)
		_ = json.Unmarshal(raw, &flags)
		if flags.IsForgotten {
			fin.forgotten++
		}
		if cv.ExternalID != "" {
			fin.customers[cv.ExternalID] = cv
		}
	}, func(err string) { fin.problems["retrieval"] = append(fin.problems["retrieval"], err) })
	readPages(a, base, "/api/data/events/?limit=1000", "events", func(raw json.RawMessage) {
		var ev eventView
		_ = json.Unmarshal(raw, &ev)
		fin.events = append(fin.events, ev)
	}, func(err string) { fin.problems["events"] = append(fin.problems["events"], err) })
	readPages(a, base, "/api/data/sales/?limit=1000", "sales", func(raw json.RawMessage) {
		var sv saleView
		_ = json.Unmarshal(raw, &sv)
		fin.sales = append(fin.sales, sv)
	}, func(err string) { fin.problems["sales"] = append(fin.problems["sales"], err) })
	for len(fin.queue) < fin.lastNum {
		e := a.call(base, "GET", fmt.Sprintf("/api/datatargets/%s/retrieve/?after=%d&limit=1000", dt, len(fin.queue)), nil)
		var page struct{ Messages []json.RawMessage }
		if e.Status != 200 || json.Unmarshal(e.Answer, &page) != nil || len(page.Messages) == 0 {
			break
		}
		for _, m := range page.Messages {
			fin.queue = append(fin.queue, canonical(m))
		}
	}
	for _, nd := range c.nodes {
		name := fmt.Sprintf("node-%d.log", nd.index)
		b, _ := os.ReadFile(filepath.Join(c.dir, name))
		fin.logs[name] = string(b)
	}
	forgetProblem := func(err string) { fin.problems["forgets"] = append(fin.problems["forgets"], err) }
	updates := readSyncQueues(a, base, dts, fin.documents, forgetProblem)
	readOutletLogs(a, base, dts, fin.documents, forgetProblem)
	// The logs before the receiver's requests: an attempt that came after
	// the logs were read shows as one not logged.
	fin.outletLogs = readAttemptLogs(a, base, dts, updates, func(err string) { fin.problems["attempts"] = append(fin.problems["attempts"], err) })
	for _, p := range slices.Sorted(maps.Keys(dts.byPath)) {
		fin.attempts[p] = rcv.requests(p)
	}
	for _, p := range []string{"/batched", "/single"} {
		fin.batches[p] = accepted(fin.attempts[p])
	}
	// Kept with a failing run: what the receiver got and what the logs say.
	if b, err := json.MarshalIndent(map[string]any{"requests": fin.attempts, "log_entries": fin.outletLogs}, "", " "); err == nil {
		_ = os.WriteFile(filepath.Join(c.dir, "attempts.json"), b, 0o644)
	}
	fin.changesForgotten, fin.changesOpened = readChanges(a, base, fin.documents, forgetProblem)
	fin.exportForgotten, fin.exportPersonal = readExport(ctx, c, fin.documents, forgetProblem)
	fin.rebuilt, fin.rebuildDiffs = rebuildAndCompare(ctx, c, func(err string) { fin.problems["rebuild"] = append(fin.problems["rebuild"], err) })
	return fin
}

// readPages reads every page of a retrieval list (the list under key),
// following next_url.
func readPages(a *api, base, path, key string, each func(json.RawMessage), problem func(string)) {
	for next := path; next != ""; {
		e := a.call(base, "GET", next, nil)
		var page map[string]json.RawMessage
		var list []json.RawMessage
		if e.Status != 200 || json.Unmarshal(e.Answer, &page) != nil || json.Unmarshal(page[key], &list) != nil {
			problem(fmt.Sprintf("GET %s: %d %s %s", next, e.Status, trim(e.Answer), e.Err))
			return
		}
		for _, raw := range list {
			each(raw)
		}
		var nextURL string
		_ = json.Unmarshal(page["next_url"], &nextURL)
		next = ""
		if i := strings.Index(nextURL, "/api/"); i >= 0 {
			next = nextURL[i:]
		}
	}
}

// projection is a row of `clientele projections status`.
type projection struct {
	name, kind   string
	lag, applied int64
}

// projectionStatus runs `clientele projections status` on the database
// the nodes use (the multi-host URL finds the primary of now) and reads
// its table: NAME KIND CHECKPOINT HEAD LAG EVENTS/S APPLIED UPDATED
// STALLED.
func projectionStatus(ctx context.Context, c *cluster) ([]projection, error) {
	cmd := exec.CommandContext(ctx, c.bin, "projections", "status", "--sample", "0")
	cmd.Env = c.env
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("projections status: %w", err)
	}
	var rows []projection
	for _, line := range strings.Split(string(out), "\n")[1:] {
		f := strings.Fields(line)
		if len(f) != 9 {
			break // the table ends; the parked companies may follow
		}
		lag, err1 := strconv.ParseInt(f[4], 10, 64)
		applied, err2 := strconv.ParseInt(f[6], 10, 64)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("projections status: a row I cannot read: %q", line)
		}
		rows = append(rows, projection{name: f[0], kind: f[1], lag: lag, applied: applied})
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("projections status: no rows in %q", out)
	}
	return rows, nil
}

func envDuration(name string, def time.Duration) time.Duration {
	if v := os.Getenv(name); v != "" {
		if d, err := time.ParseDuration(v); err == nil {
			return d
		}
		fmt.Fprintf(os.Stderr, "chaos: %s=%q is no duration (such as 90s or 10m); using %v\n", name, v, def)
	}
	return def
}

func envSeed(name string) uint64 {
	if v := os.Getenv(name); v != "" {
		if s, err := strconv.ParseUint(v, 10, 64); err == nil {
			return s
		}
		fmt.Fprintf(os.Stderr, "chaos: %s=%q is no number; using the clock\n", name, v)
	}
	return uint64(time.Now().UnixNano() % 1_000_000_000)
}
