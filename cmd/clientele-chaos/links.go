package main

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/rs/zerolog"
)

// links are the fault-injecting TCP proxies (toxiproxy, in this process)
// between each serve node and each server it talks to: the PostgreSQL
// primary and standby, and every NATS server. A node's DATABASE_URL and
// bus URL name its own proxies only, so that a fault on a link touches
// that node alone.
type links struct {
	server *toxiproxy.ApiServer
	// byNode[i] are node i's proxies: "pg-primary", "pg-standby", then
	// "nats-0", "nats-1", ... by name.
	byNode []map[string]*toxiproxy.Proxy
}

// link is the name of one of a node's proxies.
func pgLink(i int) string   { return []string{"pg-primary", "pg-standby"}[i] }
func natsLink(i int) string { return fmt.Sprintf("nats-%d", i) }

// startLinks starts, for each of n nodes, a proxy to each upstream
// address (by link name) on a free port of the loopback interface.
func startLinks(n int, upstreams map[string]string) (*links, error) {
	l := &links{server: toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop())}
	for i := range n {
		proxies := map[string]*toxiproxy.Proxy{}
		for name, upstream := range upstreams {
			p := toxiproxy.NewProxy(l.server, fmt.Sprintf("node-%d/%s", i, name), "127.0.0.1:0", upstream)
			if err := l.server.Collection.Add(p, true); err != nil {
				l.close()
				return nil, fmt.Errorf("proxy %s: %w", p.Name, err)
			}
			proxies[name] = p
		}
		l.byNode = append(l.byNode, proxies)
	}
	return l, nil
}

// port is the port node i's proxy of link listens on.
func (l *links) port(i int, link string) string {
	_, port, _ := net.SplitHostPort(l.byNode[i][link].Listen)
	return port
}

// addToxic adds a toxic named name of kind (a toxiproxy toxic type) with
// attrs to node i's proxies of the given links, in both directions.
func (l *links) addToxic(i int, names []string, name, kind string, attrs string) error {
	for _, link := range names {
		p := l.byNode[i][link]
		for _, dir := range []string{"upstream", "downstream"} {
			body := fmt.Sprintf(`{"name":%q,"type":%q,"stream":%q,"toxicity":1,"attributes":%s}`, name+"_"+dir, kind, dir, attrs)
			if _, err := p.Toxics.AddToxicJson(strings.NewReader(body)); err != nil {
				return fmt.Errorf("toxic %s on %s: %w", name, p.Name, err)
			}
		}
	}
	return nil
}

// removeToxic removes what addToxic added. A timeout toxic removed closes
// the connections it held (toxiproxy's cleanup): a connection that lost
// data in a partition does not come back corrupted.
func (l *links) removeToxic(ctx context.Context, i int, names []string, name string) {
	for _, link := range names {
		p := l.byNode[i][link]
		for _, dir := range []string{"upstream", "downstream"} {
			_ = p.Toxics.RemoveToxic(ctx, name+"_"+dir)
		}
	}
}

func (l *links) close() {
	if l != nil {
		_ = l.server.Collection.Clear()
	}
}

// proxiedDatabaseURL is multiHost (pg.MultiHostURL of the primary and
// the standby, over TCP) with the ports of node i's proxies in place of
// the servers'.
func (l *links) proxiedDatabaseURL(multiHost string, i int) (string, error) {
	u, err := url.Parse(multiHost)
	if err != nil {
		return "", err
	}
	q := u.Query()
	if strings.Contains(q.Get("host"), "/") {
		return "", fmt.Errorf("the PostgreSQL servers listen on sockets, not TCP: %s", q.Get("host"))
	}
	q.Set("port", l.port(i, pgLink(0))+","+l.port(i, pgLink(1)))
	u.RawQuery = q.Encode()
	return u.String(), nil
}

// proxiedBusURL is the bus URL of node i: its NATS proxies.
func (l *links) proxiedBusURL(i, servers int, params string) string {
	urls := make([]string, servers)
	for s := range servers {
		urls[s] = "nats://127.0.0.1:" + l.port(i, natsLink(s))
	}
	return strings.Join(urls, ",") + "?" + params
}

// hostPort is the host:port of a nats:// or postgres:// URL.
func hostPort(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", err
	}
	if u.Host == "" {
		return "", fmt.Errorf("no TCP address in %s", raw)
	}
	return u.Host, nil
}

// natsWithoutAdvertise puts first on PATH a nats-server that runs the
// machine's with --no_advertise: a NATS server tells its clients the
// other members' addresses, and a node's client would go around its
// proxies to them when a fault cuts it off (a real partition cuts those
// too). natstest finds nats-server on PATH.
func natsWithoutAdvertise(dir, real string) error {
	binDir := filepath.Join(dir, "bin")
	if err := os.MkdirAll(binDir, 0o755); err != nil {
		return err
	}
	script := fmt.Sprintf("#!/bin/sh\nexec %q \"$@\" --no_advertise\n", real)
	if err := os.WriteFile(filepath.Join(binDir, "nats-server"), []byte(script), 0o755); err != nil {
		return err
	}
	return os.Setenv("PATH", binDir+string(os.PathListSeparator)+os.Getenv("PATH"))
}
