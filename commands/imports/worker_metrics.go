package imports

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/clientele/clientele/domain/importing"
	"github.com/clientele/clientele/internal/telemetry"
)

// importMetrics are the import worker's Prometheus collectors: what tells
// an operator that a company's imports stand still, which nothing else
// shows (the uploads are still answered 200).
type importMetrics struct {
	failures *prometheus.CounterVec
	isolated *prometheus.CounterVec
	resolved *prometheus.CounterVec
	stalled  prometheus.Gauge
}

// newImportMetrics returns the collectors, with a series for each of
// entities.
func newImportMetrics(entities []importing.Entity) *importMetrics {
	m := &importMetrics{
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "clientele_import_chunk_failures_total",
			Help: "Failed attempts to apply an import chunk, by entity and kind: transient (the database unreachable, a lost race; retried as it is) or persistent (the same attempt fails again; from the third, the worker looks for the records that fail it).",
		}, []string{"entity", "kind"}),
		isolated: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "clientele_import_records_isolated_total",
			Help: "Records rejected because the store refused them: found in a chunk that kept failing, so that the rest of the chunk and the company's later uploads are applied.",
		}, []string{"entity"}),
		resolved: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "clientele_import_chunks_resolved_total",
			Help: "Import chunks resolved (read, decided, sealed) by entity and where: ahead (while the company's chunk before wrote and committed, on another core) or transaction (in the chunk's own transaction: a run's first chunk, a retry, or when the chunk before did not commit).",
		}, []string{"entity", "where"}),
		stalled: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "clientele_import_companies_stalled",
			Help: "Companies whose imports have chunks to apply and have not moved for StallAfter (30 s), as the worker last saw (refreshed every StallAfter). `clientele projections status` lists them.",
		}),
	}
	// Create every series, so that dashboards see zeros rather than gaps.
	for _, e := range entities {
		for _, kind := range []string{failureTransient, failurePersistent} {
			m.failures.WithLabelValues(string(e), kind)
		}
		m.isolated.WithLabelValues(string(e))
		for _, where := range []string{resolvedAhead, resolvedInTransaction} {
			m.resolved.WithLabelValues(string(e), where)
		}
	}
	return m
}

// Where chunks are resolved.
const (
	resolvedAhead         = "ahead"
	resolvedInTransaction = "transaction"
)

// The kinds of chunk failures.
const (
	failureTransient  = "transient"
	failurePersistent = "persistent"
)

// register registers the collectors with reg, or adopts those of the same
// names already registered (workers of one process, as tests run, share
// a registry).
func (m *importMetrics) register(reg prometheus.Registerer) error {
	var err error
	if m.failures, err = telemetry.Register(reg, m.failures); err != nil {
		return err
	}
	if m.isolated, err = telemetry.Register(reg, m.isolated); err != nil {
		return err
	}
	if m.resolved, err = telemetry.Register(reg, m.resolved); err != nil {
		return err
	}
	m.stalled, err = telemetry.Register(reg, m.stalled)
	return err
}
