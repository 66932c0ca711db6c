package main

import (
	"fmt"
	"strings"

	"github.com/clientele/clientele/eventstore"
	"github.com/clientele/clientele/internal/bus"
)

// openBus builds the message transport that --bus names: nil for
// PostgreSQL (the default: the consumers read the outbox tables
// themselves), or NATS JetStream, which a.close closes. It connects on
// first use, so the subcommands that consume nothing never reach NATS.
func (g *globals) openBus(a *app) (bus.Transport, error) {
	switch u := strings.TrimSpace(g.busURL); {
	case u == "" || u == "postgres":
		return nil, nil
	case strings.HasPrefix(u, "nats://") || strings.HasPrefix(u, "tls://"):
		// The relay reads the outbox as soon as this node commits.
		t, err := bus.NewNATS(a.pool, bus.NATSConfig{URL: u, Logger: a.log, Relay: bus.PostgresConfig{Wake: eventstore.CommitsOf(a.store)}})
		if err != nil {
			return nil, fmt.Errorf("--bus: %w", err)
		}
		a.closers = append(a.closers, func() { _ = t.Close() })
		a.log.Debug("message bus: NATS JetStream", "ack_wait", t.AckWait().String())
		return t, nil
	}
	return nil, fmt.Errorf("--bus %q: want postgres or nats://HOST:PORT", g.busURL)
}
