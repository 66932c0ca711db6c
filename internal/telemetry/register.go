// Package telemetry holds the Prometheus helpers the components share,
// knowing no port and no layer (Register). Decorators of a port live next
// to it (eventstore/telemetry).
package telemetry

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

// Register registers c with reg, or returns the identical collector
// already registered under its name: several components of one process
// (the servers and workers that tests start side by side) may share a
// registry.
func Register[C prometheus.Collector](reg prometheus.Registerer, c C) (C, error) {
	err := reg.Register(c)
	var are prometheus.AlreadyRegisteredError
	if errors.As(err, &are) {
		if existing, ok := are.ExistingCollector.(C); ok {
			return existing, nil
		}
	}
	return c, err
}
