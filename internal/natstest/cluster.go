package natstest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"
)

// clusterName is the name every member of a Cluster gives its cluster.
const clusterName = "clientele"

// Cluster is n nats-server processes with JetStream routed to each other
// as one cluster, each with its own store, on ports of the loopback
// interface: what streams with several replicas need.
type Cluster struct {
	Servers []*Server
}

// NewCluster starts a cluster of n servers for tb, waits until it has
// elected its JetStream meta leader, and stops it when tb ends.
func NewCluster(tb testing.TB, n int) *Cluster {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := StartCluster(ctx, n)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := c.Close(); err != nil {
			tb.Logf("natstest: %v", err)
		}
	})
	return c
}

// StartCluster starts n servers as one cluster and returns once every
// one of them names the same JetStream meta leader. The caller closes
// it. Each server solicits routes to all the others, and keeps its ports
// at a Restart.
func StartCluster(ctx context.Context, n int) (*Cluster, error) {
	if n < 1 {
		return nil, errors.New("natstest: a cluster needs a server")
	}
	bin, err := Binary()
	if err != nil {
		return nil, err
	}
	// A clustered JetStream server will not start without routes to
	// solicit, so each needs the others' cluster ports before they run:
	// they are chosen here, free a moment ago (the client and monitoring
	// ports are still the servers' picks).
	routes, err := freeRoutes(n)
	if err != nil {
		return nil, err
	}
	c := &Cluster{}
	for i := range n {
		dir, err := os.MkdirTemp("", "clientele-nats-")
		if err != nil {
			c.Close()
			return nil, err
		}
		s := &Server{bin: bin, dir: dir, route: routes[i]}
		s.peer = &peer{name: fmt.Sprintf("n%d", i+1), routes: func() []string { return c.routesBut(s) }}
		c.Servers = append(c.Servers, s)
	}
	for _, s := range c.Servers {
		if err := s.start(ctx, "-1"); err != nil {
			c.Close()
			return nil, err
		}
	}
	if err := c.WaitReady(ctx); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// freeRoutes returns n cluster URLs on ports of the loopback interface
// that were free when it looked.
func freeRoutes(n int) ([]string, error) {
	var out []string
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		out = append(out, "nats://"+l.Addr().String())
	}
	return out, nil
}

// routesBut lists the cluster URLs of the members other than s.
func (c *Cluster) routesBut(s *Server) []string {
	var out []string
	for _, o := range c.Servers {
		if r := o.RouteURL(); o != s && r != "" {
			out = append(out, r)
		}
	}
	return out
}

// URL is the client URL of every member, comma-separated, as a NATS
// client takes a cluster.
func (c *Cluster) URL() string {
	urls := make([]string, len(c.Servers))
	for i, s := range c.Servers {
		urls[i] = s.URL()
	}
	return strings.Join(urls, ",")
}

// WaitReady waits until every member is up and names the same JetStream
// meta leader (its /jsz): the cluster can make streams with as many
// replicas as it has members. After a member's Restart, it waits until
// the member has joined again.
func (c *Cluster) WaitReady(ctx context.Context) error {
	last := "no answer yet"
	for {
		_, err := c.metaLeader(ctx)
		if err == nil {
			return nil
		}
		last = err.Error()
		select {
		case <-ctx.Done():
			var logs strings.Builder
			for _, s := range c.Servers {
				fmt.Fprintf(&logs, "--- %s:\n%s", s.peer.name, s.Log())
			}
			return fmt.Errorf("natstest: the cluster elected no meta leader all its members know (%s): %w\n%s", last, ctx.Err(), logs.String())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// metaLeader asks every member's /jsz for its meta leader and returns
// it when they all name the same one.
func (c *Cluster) metaLeader(ctx context.Context) (string, error) {
	leader := ""
	for _, s := range c.Servers {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.MonitorURL()+"/jsz", nil)
		if err != nil {
			return "", err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return "", fmt.Errorf("%s: %w", s.peer.name, err)
		}
		var v struct {
			Meta *struct {
				Leader string `json:"leader"`
			} `json:"meta_cluster"`
		}
		err = json.NewDecoder(resp.Body).Decode(&v)
		resp.Body.Close()
		switch {
		case err != nil:
			return "", fmt.Errorf("%s: /jsz: %w", s.peer.name, err)
		case v.Meta == nil || v.Meta.Leader == "":
			return "", fmt.Errorf("%s knows no meta leader", s.peer.name)
		case leader != "" && v.Meta.Leader != leader:
			return "", fmt.Errorf("members name different meta leaders, %s and %s", leader, v.Meta.Leader)
		}
		leader = v.Meta.Leader
	}
	return leader, nil
}

// Close stops every member and removes their stores.
func (c *Cluster) Close() error {
	var errs []error
	for _, s := range c.Servers {
		errs = append(errs, s.Close())
	}
	return errors.Join(errs...)
}
