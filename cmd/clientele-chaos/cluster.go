package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sync"
	"syscall"
	"time"

	"github.com/clientele/clientele/internal/natstest"
	"github.com/clientele/clientele/internal/pg"
)

// cluster is what the harness runs: PostgreSQL as a primary and a
// synchronous standby, a three-node NATS JetStream cluster whose streams
// have three replicas, and the serve nodes, each a child process of the
// built binary.
type cluster struct {
	bin     string // the built clientele binary
	dir     string // the run folder
	primary *pg.Embedded
	standby *pg.Embedded
	nats    *natstest.Cluster
	links   *links   // the proxies between each node and each server
	env     []string // the one-off commands' environment: the servers themselves
	nodes   []*node
}

// node is one serve process, started again under the same index after a
// kill; its output is appended to node-<i>.log in the run folder.
type node struct {
	index int
	mu    sync.Mutex
	cmd   *exec.Cmd
	base  string // http://127.0.0.1:PORT, "" while it is down
	done  chan struct{}
}

var listening = regexp.MustCompile(`listening on (http://\S+)`)

// natsServers is the size of the NATS cluster, and the replicas of its
// streams: one server may die without a stream losing its quorum.
const natsServers = 3

// startCluster starts PostgreSQL with its standby, NATS and n nodes, and
// creates the company acme with an admin user.
func startCluster(ctx context.Context, bin, dir string, n int) (*cluster, error) {
	c := &cluster{bin: bin, dir: dir}
	var err error
	c.primary, err = pg.StartEmbedded(ctx, pg.EmbeddedOptions{Dir: filepath.Join(dir, "pg-primary")})
	if err != nil {
		return c, err
	}
	c.standby, err = c.primary.StartStandby(ctx, pg.EmbeddedOptions{Dir: filepath.Join(dir, "pg-standby")})
	if err != nil {
		return c, err
	}
	realNATS, err := natstest.Binary()
	if err != nil {
		return c, err
	}
	if err := natsWithoutAdvertise(dir, realNATS); err != nil {
		return c, err
	}
	c.nats, err = natstest.StartCluster(ctx, natsServers)
	if err != nil {
		return c, err
	}
	upstreams := map[string]string{}
	for i, s := range []*pg.Embedded{c.primary, c.standby} {
		if upstreams[pgLink(i)], err = hostPort(s.ServerURL("postgres")); err != nil {
			return c, err
		}
	}
	for i, s := range c.nats.Servers {
		if upstreams[natsLink(i)], err = hostPort(s.URL()); err != nil {
			return c, err
		}
	}
	if c.links, err = startLinks(n, upstreams); err != nil {
		return c, err
	}
	c.env = append(os.Environ(),
		"DATABASE_URL="+pg.MultiHostURL(c.primary, c.standby),
		"CLIENTELE_DATA_DIR="+filepath.Join(dir, "data"),
		"CLIENTELE_BUS_URL="+c.nats.URL()+"?"+busParams,
		"CLIENTELE_LOG_LEVEL=warn",
		"CLIENTELE_WEBHOOK_ALLOW_CIDRS=127.0.0.0/8",
	)
	if err := c.command(ctx, "migrate"); err != nil {
		return c, err
	}
	if err := c.command(ctx, "company", "create", "acme", "--name", "ACME Oy"); err != nil {
		return c, err
	}
	if err := c.command(ctx, "user", "create", "--company", "acme", "--email", adminEmail, "--password", adminPassword, "--role", "admin"); err != nil {
		return c, err
	}
	for i := range n {
		nd := &node{index: i}
		c.nodes = append(c.nodes, nd)
		if err := c.start(ctx, nd); err != nil {
			return c, err
		}
	}
	return c, nil
}

// busParams are the bus URL's parameters: streams on every NATS server;
// a short ack wait, so that messages a killed node held go to another
// soon.
var busParams = fmt.Sprintf("replicas=%d&ack_wait=5s", natsServers)

// nodeEnv is node i's environment: the one-off commands', with the
// database and the bus reached through the node's own proxies.
func (c *cluster) nodeEnv(i int) ([]string, error) {
	dbURL, err := c.links.proxiedDatabaseURL(pg.MultiHostURL(c.primary, c.standby), i)
	if err != nil {
		return nil, err
	}
	env := append([]string(nil), c.env...)
	return append(env, "DATABASE_URL="+dbURL, "CLIENTELE_BUS_URL="+c.links.proxiedBusURL(i, natsServers, busParams)), nil
}

const (
	adminEmail    = "ops@acme.test"
	adminPassword = "correct horse battery"
)

// command runs a one-off clientele command with the nodes' environment.
func (c *cluster) command(ctx context.Context, args ...string) error {
	cmd := exec.CommandContext(ctx, c.bin, args...)
	cmd.Env = c.env
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("clientele %v: %w\n%s", args, err, out)
	}
	return nil
}

// start starts nd's serve process and returns once it listens.
func (c *cluster) start(ctx context.Context, nd *node) error {
	logFile, err := os.OpenFile(filepath.Join(c.dir, fmt.Sprintf("node-%d.log", nd.index)), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	env, err := c.nodeEnv(nd.index)
	if err != nil {
		logFile.Close()
		return err
	}
	cmd := exec.Command(c.bin, "serve", "--addr", "127.0.0.1:0", "--rate-limit", "100000")
	cmd.Env = env
	// The node dies with the harness, even a harness killed.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		logFile.Close()
		return err
	}
	cmd.Stderr = logFile
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return err
	}
	fmt.Fprintf(logFile, "=== chaos: node %d started, pid %d, at %s\n", nd.index, cmd.Process.Pid, time.Now().UTC().Format(time.RFC3339Nano))
	addr := make(chan string, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer logFile.Close()
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			line := sc.Text()
			if m := listening.FindStringSubmatch(line); m != nil {
				select {
				case addr <- m[1]:
				default:
				}
			}
			fmt.Fprintln(logFile, line)
		}
		_ = cmd.Wait()
	}()
	select {
	case base := <-addr:
		nd.mu.Lock()
		nd.cmd, nd.base, nd.done = cmd, base, done
		nd.mu.Unlock()
		return nil
	case <-done:
		return fmt.Errorf("node %d exited at start (see node-%d.log)", nd.index, nd.index)
	case <-time.After(90 * time.Second):
		_ = cmd.Process.Kill()
		return fmt.Errorf("node %d did not listen within 90s", nd.index)
	case <-ctx.Done():
		_ = cmd.Process.Kill()
		return ctx.Err()
	}
}

// kill ends nd with SIGKILL and waits for its end.
func (c *cluster) kill(nd *node) {
	nd.mu.Lock()
	cmd, done := nd.cmd, nd.done
	nd.base = ""
	nd.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	<-done
}

// stop ends nd with SIGTERM (SIGKILL after 30 s).
func (c *cluster) stop(nd *node) {
	nd.mu.Lock()
	cmd, done := nd.cmd, nd.done
	nd.base = ""
	nd.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		<-done
	}
}

// bases lists the addresses of the nodes up now.
func (c *cluster) bases() []string {
	var out []string
	for _, nd := range c.nodes {
		nd.mu.Lock()
		if nd.base != "" {
			out = append(out, nd.base)
		}
		nd.mu.Unlock()
	}
	return out
}

// pids names the running serve processes by pid: node-<index>.
func (c *cluster) pids() map[int]string {
	out := map[int]string{}
	for _, nd := range c.nodes {
		nd.mu.Lock()
		if nd.cmd != nil && nd.base != "" {
			out[nd.cmd.Process.Pid] = fmt.Sprintf("node-%d", nd.index)
		}
		nd.mu.Unlock()
	}
	return out
}

// killNATS ends NATS server i with SIGKILL and waits for its end.
func (c *cluster) killNATS(i int) {
	c.nats.Servers[i].Kill()
}

// restartNATS starts NATS server i again, on its ports with its store,
// and waits until it has joined the cluster again.
func (c *cluster) restartNATS(ctx context.Context, i int) error {
	if err := c.nats.Servers[i].Restart(ctx); err != nil {
		return err
	}
	return c.nats.WaitReady(ctx)
}

// close stops everything the harness started.
func (c *cluster) close() {
	for _, nd := range c.nodes {
		c.stop(nd)
	}
	c.links.close()
	if c.nats != nil {
		_ = c.nats.Close()
	}
	if c.standby != nil {
		_ = c.standby.Close()
	}
	if c.primary != nil {
		_ = c.primary.Close()
	}
}
