package delivery

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/clientele/clientele/domain/datatarget"
)

// metrics are the Deliverer's Prometheus collectors. Outlets are not a
// label: there may be many, and the outlet log holds the detail.
type metrics struct {
	attempts  *prometheus.CounterVec
	delivered prometheus.Counter
	duration  prometheus.Histogram
	workers   prometheus.Gauge
	parked    prometheus.Counter
}

func newMetrics() *metrics {
	m := &metrics{
		attempts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "clientele_webhook_attempts_total",
			Help: "Webhook delivery attempts, by status (OK or FAIL).",
		}, []string{"status"}),
		delivered: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "clientele_webhook_delivered_messages_total",
			Help: "Messages delivered by webhook outlets (acknowledged with 2xx).",
		}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "clientele_webhook_request_duration_seconds",
			Help:    "Duration of webhook delivery attempts, from the request to the end of the reply.",
			Buckets: prometheus.ExponentialBuckets(0.001, 4, 9),
		}),
		workers: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "clientele_webhook_workers",
			Help: "Outlets this process is delivering now.",
		}),
		parked: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "clientele_webhook_parked_batches_total",
			Help: "Batches parked by outlets' failure policies.",
		}),
	}
	m.attempts.WithLabelValues(datatarget.StatusOK)
	m.attempts.WithLabelValues(datatarget.StatusFail)
	return m
}

func (m *metrics) register(reg prometheus.Registerer) error {
	for _, c := range []prometheus.Collector{m.attempts, m.delivered, m.duration, m.workers, m.parked} {
		if err := reg.Register(c); err != nil {
			return fmt.Errorf("delivery: register metrics: %w", err)
		}
	}
	return nil
}

// observe counts one recorded attempt.
func (m *metrics) observe(e datatarget.LogEntry) {
	m.attempts.WithLabelValues(e.Status).Inc()
	m.duration.Observe(float64(e.RequestTimeMS) / 1000)
	if e.Status == datatarget.StatusOK {
		m.delivered.Add(float64(e.BatchSize))
	}
}
