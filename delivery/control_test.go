package delivery_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/clientele/clientele/commands"
	"github.com/clientele/clientele/delivery"
	"github.com/clientele/clientele/domain/datatarget"
)

// TestControlNeverOverlaps: two deliverers (two serve processes) deliver
// one outlet while it is paused, resumed, pointed at another URL and
// switched between batched and not, and its datatarget paused and
// resumed, again and again: no two requests ever overlap, and every
// message arrives once, in order.
func TestControlNeverOverlaps(t *testing.T) {
	h := newHarness(t)
	rcv := newReceiver(t)
	rcv.setBehaviour(func(http.ResponseWriter, *http.Request, []byte) bool {
		time.Sleep(time.Millisecond) // widen the window for an overlap
		return false
	})
	o := h.outlet(rcv.url(), true)
	h.run(h.config(func(c *delivery.Config) { c.Holder, c.LeaseTTL = "A", 10*time.Second }))
	h.run(h.config(func(c *delivery.Config) { c.Holder, c.LeaseTTL = "B", 10*time.Second }))
	ctx := context.Background()
	change := func(patch datatarget.OutletPatch) {
		t.Helper()
		if err := h.cmds.ChangeOutlet.Handle(ctx, commands.ChangeOutlet{Principal: h.p, DatatargetID: h.dt.ID, OutletID: o.ID, Patch: patch}); err != nil {
			t.Fatal(err)
		}
	}
	pauseDatatarget := func(enabled bool) {
		t.Helper()
		if _, err := h.cmds.UpdateDatatarget.Handle(ctx, commands.UpdateDatatarget{Principal: h.p, DatatargetID: h.dt.ID, Patch: datatarget.Patch{Enabled: &enabled}}); err != nil {
			t.Fatal(err)
		}
	}
	yes, no := true, false
	urls := []string{rcv.url(), rcv.srv.URL + "/other"}
	for i := range 30 {
		h.post(40)
		switch i % 4 {
		case 0:
			change(datatarget.OutletPatch{Enabled: &no})
			change(datatarget.OutletPatch{Enabled: &yes})
		case 1:
			u := urls[i%2]
			change(datatarget.OutletPatch{Request: &datatarget.RequestPatch{URL: &u}})
		case 2:
			batched := i%3 == 0
			change(datatarget.OutletPatch{IsBatched: &batched})
		case 3:
			pauseDatatarget(false)
			pauseDatatarget(true)
		}
		// Let the outlet move, whichever holder has it.
		want := int64(h.next - 1 - 20)
		waitFor(t, 20*time.Second, "progress", func() bool { return h.outletState(o.ID).Progress.LastDeliveredMessageNumber >= want })
	}
	waitFor(t, 30*time.Second, "every message", func() bool { return h.outletState(o.ID).Progress.LastDeliveredMessageNumber == 1200 })
	checkExactly(t, rcv.accepted(), 1200)
	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	if rcv.overlaps != 0 {
		t.Errorf("%d requests overlapped another", rcv.overlaps)
	}
}

// TestRewindNeverOverlaps: two deliverers deliver one outlet while it is
// rewound again and again: no two requests overlap, each rewind restarts
// the stream at the number after it (never anywhere else), and the
// outlet ends with every message delivered.
func TestRewindNeverOverlaps(t *testing.T) {
	h := newHarness(t)
	rcv := newReceiver(t)
	rcv.setBehaviour(func(http.ResponseWriter, *http.Request, []byte) bool {
		time.Sleep(time.Millisecond) // widen the window for an overlap
		return false
	})
	o := h.outlet(rcv.url(), true)
	h.run(h.config(func(c *delivery.Config) { c.Holder, c.LeaseTTL = "A", 10*time.Second }))
	h.run(h.config(func(c *delivery.Config) { c.Holder, c.LeaseTTL = "B", 10*time.Second }))
	ctx := context.Background()
	restarts := map[int]bool{1: true}
	for range 15 {
		h.post(60)
		want := int64(h.next - 1 - 30)
		waitFor(t, 20*time.Second, "progress", func() bool { return h.outletState(o.ID).Progress.LastDeliveredMessageNumber >= want })
		after := want - 25
		restarts[int(after)+1] = true
		if err := h.cmds.RewindOutlet.Handle(ctx, commands.RewindOutlet{Principal: h.p, DatatargetID: h.dt.ID, OutletID: o.ID,
			After: after, Position: h.outletState(o.ID).Progress.LastDeliveredMessageNumber}); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, 30*time.Second, "every message", func() bool { return h.outletState(o.ID).Progress.LastDeliveredMessageNumber == 900 })
	got := rcv.accepted()
	for i, n := range got {
		if i > 0 && n != got[i-1]+1 && !(n <= got[i-1] && restarts[n]) {
			t.Fatalf("message %d received after %d: neither the next nor a rewind's restart", n, got[i-1])
		}
	}
	if got[len(got)-1] != 900 {
		t.Errorf("the last message received is %d, want 900", got[len(got)-1])
	}
	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	if rcv.overlaps != 0 {
		t.Errorf("%d requests overlapped another", rcv.overlaps)
	}
}
