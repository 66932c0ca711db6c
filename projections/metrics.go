package projections

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the runtime's Prometheus collectors, labelled by projection.
type metrics struct {
	applied *prometheus.CounterVec
	skipped *prometheus.CounterVec
	errors  *prometheus.CounterVec
	lag     *prometheus.GaugeVec
	stalled *prometheus.GaugeVec
}

func newMetrics(names []string) *metrics {
	m := &metrics{
		applied: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "clientele_projection_events_applied_total",
			Help: "Events applied to the read model, by projection. Inline projections count in the append transaction, even if it later rolls back.",
		}, []string{"projection"}),
		skipped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "clientele_projection_commits_skipped_total",
			Help: "Commit messages an async projection skipped because its checkpoint was past them (redeliveries, or commits a rebuild applied), or held because their company is parked.",
		}, []string{"projection"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "clientele_projection_handler_errors_total",
			Help: "Failed attempts to apply a commit, by async projection; the commit is retried.",
		}, []string{"projection"}),
		lag: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "clientele_projection_lag_events",
			Help: "Events in the log after the projection's checkpoint, counted up to 100,000 (0 for inline projections), refreshed periodically.",
		}, []string{"projection"}),
		stalled: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "clientele_projection_stalled_companies",
			Help: "Companies parked for an async projection: a commit of theirs cannot be applied, and their later commits wait for it (clientele projections stalls).",
		}, []string{"projection"}),
	}
	// Create every series, so that dashboards see zeros rather than gaps.
	for _, n := range names {
		m.applied.WithLabelValues(n)
		m.skipped.WithLabelValues(n)
		m.errors.WithLabelValues(n)
		m.lag.WithLabelValues(n)
		m.stalled.WithLabelValues(n)
	}
	return m
}

func (m *metrics) register(reg prometheus.Registerer) error {
	for _, c := range []prometheus.Collector{m.applied, m.skipped, m.errors, m.lag, m.stalled} {
		if err := reg.Register(c); err != nil {
			return fmt.Errorf("projections: register metrics: %w", err)
		}
	}
	return nil
}
