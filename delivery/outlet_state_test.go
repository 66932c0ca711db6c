package delivery_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/clientele/clientele/delivery"
	"github.com/clientele/clientele/domain/datatarget"
)

// TestOutletStateAndGauges: an outlet whose receiver refuses is
// "retrying", its oldest undelivered message aged in the outlet and in
// the gauge; once its failure policy parks the batch, the parked gauge
// counts it; caught up, it is "delivering" with no undelivered message
// and an age of 0.
func TestOutletStateAndGauges(t *testing.T) {
	h := newHarness(t)
	rcv := newReceiver(t)
	refuse := make(chan struct{})
	rcv.setBehaviour(func(w http.ResponseWriter, _ *http.Request, _ []byte) bool {
		select {
		case <-refuse:
			return false
		default:
			http.Error(w, "no", http.StatusServiceUnavailable)
			return true
		}
	})
	o := h.outlet(rcv.url(), false)
	h.post(1)
	reg := prometheus.NewRegistry()
	stop := h.run(h.config(func(c *delivery.Config) { c.Registerer = reg }))
	waitFor(t, 10*time.Second, "a failed attempt", func() bool { return h.outletState(o.ID).Progress.State == "retrying" })
	if st := h.outletState(o.ID).Progress; st.OldestUndeliveredAt == nil {
		t.Errorf("retrying, the outlet shows %+v", st)
	}
	waitFor(t, 10*time.Second, "the age gauge", func() bool { return gauge(t, reg, "clientele_webhook_outlet_oldest_undelivered_age_seconds", o.ID) > 0 })
	stop()

	// A policy of 1 attempt parks the batch at once.
	one := datatarget.FailurePolicy{MaxAttempts: 1}
	h.change(o.ID, datatarget.OutletPatch{FailurePolicy: &one})
	reg = prometheus.NewRegistry()
	h.run(h.config(func(c *delivery.Config) { c.Registerer = reg }))
	waitFor(t, 10*time.Second, "the parked batch", func() bool { return gauge(t, reg, "clientele_webhook_outlet_parked_batches", o.ID) == 1 })
	close(refuse)
	h.post(1)
	waitFor(t, 10*time.Second, "message 2", func() bool { return h.outletState(o.ID).Progress.LastDeliveredMessageNumber == 2 })
	st := h.outletState(o.ID).Progress
	if st.State != "delivering" || st.OldestUndeliveredAt != nil || st.ParkedCount != 1 {
		t.Errorf("caught up, the outlet shows %+v", st)
	}
	if age := gauge(t, reg, "clientele_webhook_outlet_oldest_undelivered_age_seconds", o.ID); age != 0 {
		t.Errorf("caught up, the age gauge is %v", age)
	}
}

// gauge reads a per-outlet gauge of reg (-1 when absent).
func gauge(t *testing.T, reg *prometheus.Registry, name, outletID string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "outlet_id" && l.GetValue() == outletID {
					return m.GetGauge().GetValue()
				}
			}
		}
	}
	return -1
}
