package delivery

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

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

// outletGauges exposes, per outlet, the age of its oldest undelivered
// message (0 when caught up) and how many of its batches are parked. The
// values are the database's, read at each scrape, so every serve process
// shows the same; an outlet is a label here because these are what an
// operator alerts on for one outlet (a dead receiver), unlike the
// counters above.
type outletGauges struct {
	pool        *pgxpool.Pool
	age, parked *prometheus.Desc
}

func newOutletGauges(pool *pgxpool.Pool) *outletGauges {
	labels := []string{"company_id", "datatarget_id", "outlet_id"}
	return &outletGauges{
		pool: pool,
		age: prometheus.NewDesc("clientele_webhook_outlet_oldest_undelivered_age_seconds",
			"Age of the outlet's oldest undelivered message; 0 when it is caught up.", labels, nil),
		parked: prometheus.NewDesc("clientele_webhook_outlet_parked_batches",
			"Batches the outlet's failure policy parked, not yet redelivered or discarded.", labels, nil),
	}
}

// Describe implements prometheus.Collector.
func (g *outletGauges) Describe(ch chan<- *prometheus.Desc) {
	ch <- g.age
	ch <- g.parked
}

// Collect implements prometheus.Collector.
func (g *outletGauges) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	rows, err := g.pool.Query(ctx, `SELECT o.company_id, o.datatarget_id, o.id,
			coalesce(extract(epoch FROM now() - (SELECT min(m.posted_at) FROM (
				SELECT posted_at FROM datatarget_messages WHERE datatarget_id = o.datatarget_id AND number = pos.n + 1
				UNION ALL SELECT posted_at FROM datasync_messages WHERE datatarget_id = o.datatarget_id AND number = pos.n + 1
				UNION ALL SELECT posted_at FROM campaign_sync_messages WHERE datatarget_id = o.datatarget_id AND number = pos.n + 1
				UNION ALL SELECT posted_at FROM segment_sync_messages WHERE datatarget_id = o.datatarget_id AND number = pos.n + 1) m))::float8, 0),
			(SELECT count(*) FROM outlet_parked p WHERE p.outlet_id = o.id)::float8
		FROM datatarget_outlets o LEFT JOIN outlet_deliveries s ON s.outlet_id = o.id
		CROSS JOIN LATERAL (SELECT coalesce(s.last_delivered_message_number, 0) AS n) pos`)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(g.age, err)
		return
	}
	defer rows.Close()
	for rows.Next() {
		var company, dt, outlet string
		var age, parked float64
		if err := rows.Scan(&company, &dt, &outlet, &age, &parked); err != nil {
			ch <- prometheus.NewInvalidMetric(g.age, err)
			return
		}
		ch <- prometheus.MustNewConstMetric(g.age, prometheus.GaugeValue, age, company, dt, outlet)
		ch <- prometheus.MustNewConstMetric(g.parked, prometheus.GaugeValue, parked, company, dt, outlet)
	}
	if err := rows.Err(); err != nil {
		ch <- prometheus.NewInvalidMetric(g.age, err)
	}
}
