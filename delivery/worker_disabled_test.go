package delivery_test

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/clientele/clientele/commands"
	"github.com/clientele/clientele/delivery"
)

// TestWorkerStopsWhenOutletDisabled: a worker retrying a failing outlet
// (here faster than a lease lasts, so it never leaves on its own) stops
// before its next attempt once the outlet is disabled: no attempt, no
// lookup of its host, after that (the dispatcher starts no worker for a
// disabled outlet).
func TestWorkerStopsWhenOutletDisabled(t *testing.T) {
	h := newHarness(t)
	o := h.outlet("http://"+reservedAddr(t)+"/hook", true)
	h.post(1)
	reg := prometheus.NewRegistry()
	h.run(h.config(func(c *delivery.Config) { c.Registerer = reg }))
	waitFor(t, 10*time.Second, "two refused attempts", func() bool { return h.countFails(o.ID, "connection refused") >= 2 })
	if n := workers(t, reg); n != 1 {
		t.Fatalf("%v workers while the outlet fails", n)
	}
	if err := h.cmds.DisableOutlet.Handle(context.Background(), commands.DisableOutlet{
		Principal: h.p, DatatargetID: h.dt.ID, OutletID: o.ID, Reason: "paused"}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the worker to stop", func() bool { return workers(t, reg) == 0 })
	if h.outletState(o.ID).Enabled {
		t.Error("the outlet is enabled")
	}
}

// workers reads the clientele_webhook_workers gauge.
func workers(t *testing.T, reg *prometheus.Registry) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() == "clientele_webhook_workers" {
			return f.GetMetric()[0].GetGauge().GetValue()
		}
	}
	t.Fatal("no clientele_webhook_workers gauge")
	return 0
}
