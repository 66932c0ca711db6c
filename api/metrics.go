package api

import (
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/clientele/clientele/internal/telemetry"
)

// metrics are the HTTP metrics. Their route label is the canonical route
// pattern, never the raw path, so its cardinality is the number of routes.
type metrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
	// handler serves the exposition of Config.Gatherer.
	handler http.Handler
}

func newMetrics(reg prometheus.Registerer, g prometheus.Gatherer, log *slog.Logger) (*metrics, error) {
	requests := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "http_requests_total",
		Help: "HTTP requests answered, by method, route and status.",
	}, []string{"method", "route", "status"})
	duration := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "http_request_duration_seconds",
		Help:    "Time to answer HTTP requests, by method and route.",
		Buckets: prometheus.DefBuckets,
	}, []string{"method", "route"})
	var err error
	if requests, err = telemetry.Register(reg, requests); err != nil {
		return nil, err
	}
	if duration, err = telemetry.Register(reg, duration); err != nil {
		return nil, err
	}
	h := promhttp.HandlerFor(g, promhttp.HandlerOpts{ErrorLog: slogErrorLog{log}})
	return &metrics{requests: requests, duration: duration, handler: h}, nil
}

func (m *metrics) observe(method, route string, status int, elapsed time.Duration) {
	m.requests.WithLabelValues(method, route, strconv.Itoa(status)).Inc()
	m.duration.WithLabelValues(method, route).Observe(elapsed.Seconds())
}

// handleMetrics serves GET /metrics: the Prometheus exposition of
// Config.Gatherer.
func (s *Server) handleMetrics(c *gin.Context) error {
	s.metrics.handler.ServeHTTP(c.Writer, c.Request)
	return nil
}

// slogErrorLog passes promhttp's gathering errors to the server's logger.
type slogErrorLog struct{ log *slog.Logger }

func (l slogErrorLog) Println(v ...any) { l.log.Error("metrics: " + fmt.Sprint(v...)) }
