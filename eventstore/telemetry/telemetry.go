// Package telemetry instruments the event store port with Prometheus
// metrics, as a decorator next to the port it decorates, so that the
// adapters stay free of metrics code and work with any of them. (The
// Prometheus helpers that know no port are internal/telemetry's.)
package telemetry

import (
	"context"
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/clientele/clientele/eventstore"
	"github.com/clientele/clientele/internal/wake"
)

// Store decorates an event store with commit metrics.
type Store struct {
	eventstore.Store
	commits   prometheus.Counter
	events    prometheus.Counter
	conflicts prometheus.Counter
	duration  prometheus.Histogram
}

// InstrumentStore returns s with its appends counted and timed on reg:
// clientele_eventstore_commits_total, clientele_eventstore_events_total,
// clientele_eventstore_conflicts_total and
// clientele_eventstore_append_seconds.
func InstrumentStore(s eventstore.Store, reg prometheus.Registerer) (*Store, error) {
	m := &Store{
		Store: s,
		commits: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "clientele_eventstore_commits_total", Help: "Commits appended to the event store.",
		}),
		events: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "clientele_eventstore_events_total", Help: "Events appended to the event store.",
		}),
		conflicts: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "clientele_eventstore_conflicts_total", Help: "Appends refused for a stream version conflict.",
		}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "clientele_eventstore_append_seconds", Help: "Duration of successful appends.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 14),
		}),
	}
	for _, c := range []prometheus.Collector{m.commits, m.events, m.conflicts, m.duration} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// Append appends through the decorated store and records the outcome.
func (m *Store) Append(ctx context.Context, c eventstore.Commit) (eventstore.Committed, error) {
	start := time.Now()
	out, err := m.Store.Append(ctx, c)
	var conflict *eventstore.ConflictError
	switch {
	case err == nil:
		m.commits.Inc()
		m.events.Add(float64(len(out.Events)))
		m.duration.Observe(time.Since(start).Seconds())
	case errors.As(err, &conflict):
		m.conflicts.Inc()
	}
	return out, err
}

// EventLog returns the decorated store's log (eventstore.LogOf).
func (m *Store) EventLog() eventstore.EventLog { return eventstore.LogOf(m.Store) }

// Commits implements eventstore.CommitSource with the wrapped store's.
func (m *Store) Commits() *wake.Signal { return eventstore.CommitsOf(m.Store) }
