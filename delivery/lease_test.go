package delivery_test

import (
	"context"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/clientele/clientele/delivery"
)

// TestOneWorkerPerOutlet: two deliverers on one database (as two serve
// processes would be) never send to one outlet at once, and hand the
// outlet over without losing or reordering a message, also when one of
// them stops.
func TestOneWorkerPerOutlet(t *testing.T) {
	h := newHarness(t)
	rcv := newReceiver(t)
	rcv.setBehaviour(func(http.ResponseWriter, *http.Request, []byte) bool {
		time.Sleep(2 * time.Millisecond) // widen the window for an overlap
		return false
	})
	h.outlet(rcv.url(), true)
	// A lease long enough that a starved machine (the whole suite runs
	// at once, with -race) does not lose it between renewals: a lost lease
	// legitimately sends the batch in flight again, which is not what this
	// test is about (TestLostLeaseRecordsNothing is).
	stopA := h.run(h.config(func(c *delivery.Config) { c.Holder, c.LeaseTTL = "A", 10*time.Second }))
	h.run(h.config(func(c *delivery.Config) { c.Holder, c.LeaseTTL = "B", 10*time.Second }))
	for i := range 20 {
		h.post(100)
		time.Sleep(15 * time.Millisecond) // let the outlet catch up and be released
		if i == 10 {
			stopA()
		}
	}
	waitFor(t, 20*time.Second, "every message", func() bool { return len(rcv.accepted()) >= 2000 })
	checkExactly(t, rcv.accepted(), 2000)
	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	if rcv.overlaps != 0 {
		t.Errorf("%d requests overlapped another", rcv.overlaps)
	}
}

// TestLostLeaseRecordsNothing: a worker whose lease was taken over while a
// request was in flight records nothing of it (its write is fenced by the
// lease) and stops; the batch is sent again once the lease is free.
func TestLostLeaseRecordsNothing(t *testing.T) {
	h := newHarness(t)
	rcv := newReceiver(t)
	ctx := context.Background()
	var calls atomic.Int32
	rcv.setBehaviour(func(http.ResponseWriter, *http.Request, []byte) bool {
		if calls.Add(1) == 1 {
			// Another holder takes the lease during the first request.
			if _, err := h.pool.Exec(ctx, `UPDATE outlet_deliveries SET lease_holder = 'intruder', lease_expires_at = now() + interval '400 ms'`); err != nil {
				t.Error(err)
			}
		}
		return false
	})
	o := h.outlet(rcv.url(), true)
	h.post(150)
	h.run(h.config())
	waitFor(t, 10*time.Second, "every message", func() bool { return h.outletState(o.ID).Progress.LastDeliveredMessageNumber == 150 })
	got := rcv.accepted()
	if len(got) != 250 || got[100] != 1 {
		t.Fatalf("received %d messages; want the first batch twice, then the second", len(got))
	}
	checkExactly(t, got[100:], 150)
	e := h.entries(o.ID)
	if len(e) != 2 || e[0].FirstMessageNumber != 1 || e[1].FirstMessageNumber != 101 {
		t.Errorf("log %+v", e)
	}
}

// TestHelperDeliverer is the serve process that TestKilledMidDelivery
// kills: it delivers until it dies.
func TestHelperDeliverer(t *testing.T) {
	url := os.Getenv("CLIENTELE_DELIVERY_HELPER_DB")
	if url == "" {
		t.Skip("run by TestKilledMidDelivery")
	}
	pool, err := pgxpool.New(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	d, err := delivery.New(delivery.Config{
		Pool: pool, Keys: testKeys(t), Disable: func(context.Context, string, string, string, string) error { return nil },
		AllowCIDRs: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}, Holder: "doomed",
		PollInterval: 10 * time.Millisecond, LeaseTTL: 2 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	_ = d.Run(context.Background())
}

// TestKilledMidDelivery kills a delivering process (SIGKILL) while its
// third batch is at the receiver, which processes it anyway. Another
// process resumes once the dead one's lease has expired: nothing is lost,
// and only the batch in flight arrives twice.
func TestKilledMidDelivery(t *testing.T) {
	h := newHarness(t)
	rcv := newReceiver(t)
	inFlight, release := make(chan struct{}), make(chan struct{})
	var calls atomic.Int32
	rcv.setBehaviour(func(http.ResponseWriter, *http.Request, []byte) bool {
		if calls.Add(1) == 3 {
			close(inFlight)
			<-release
		}
		return false
	})
	o := h.outlet(rcv.url(), true)
	h.post(1000)

	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperDeliverer$")
	cmd.Env = append(os.Environ(), "CLIENTELE_DELIVERY_HELPER_DB="+h.url)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-inFlight:
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		t.Fatal("the helper never sent its third batch")
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	close(release)

	h.run(h.config(func(c *delivery.Config) { c.Holder = "survivor" }))
	waitFor(t, 20*time.Second, "the progress", func() bool { return h.outletState(o.ID).Progress.LastDeliveredMessageNumber == 1000 })
	got := rcv.accepted()
	// 1..300 from the dead process (its third batch processed, never
	// acknowledged), then 201..1000 from the survivor.
	if len(got) != 1100 {
		t.Fatalf("received %d messages, want 1,000 and the batch in flight again", len(got))
	}
	checkExactly(t, got[:300], 300)
	checkExactly(t, append(append([]int(nil), got[:200]...), got[300:]...), 1000)
	if st := h.outletState(o.ID).Progress; st.DeliveredBatchCount != 10 {
		t.Errorf("%d batches delivered, want 10", st.DeliveredBatchCount)
	}
	if n := len(h.entries(o.ID)); n != 10 {
		t.Errorf("%d log entries; want the 10 acknowledged attempts", n)
	}
}

// TestStopFinishesTheAttemptInFlight: a worker stopped (a deploy, a
// shutdown) while a request is in flight lets it end and records it, and
// keeps its lease meanwhile, so the next worker, started at once, neither
// sends that batch again nor overlaps the request.
func TestStopFinishesTheAttemptInFlight(t *testing.T) {
	// The lease is renewed every third of its time to live, so it is lost
	// only when a renewal comes two thirds of it late: 4 s leaves room for
	// a machine loaded by two test runs at once (1 s did not: a renewal
	// late by 0.7 s legitimately lost the lease and the batch was sent
	// again, as a crash would).
	const ttl = 4 * time.Second
	h := newHarness(t)
	rcv := newReceiver(t)
	inFlight := make(chan struct{})
	var once sync.Once
	rcv.setBehaviour(func(http.ResponseWriter, *http.Request, []byte) bool {
		once.Do(func() {
			close(inFlight)
			// The stop comes meanwhile; the request outlasts the lease's
			// time to live, so only its renewal keeps the next worker out.
			time.Sleep(ttl + 500*time.Millisecond) // the slow receiver's pace: above LeaseTTL, below RequestTimeout
		})
		return false
	})
	o := h.outlet(rcv.url(), true)
	h.post(100)
	slowRequests := func(holder string) func(*delivery.Config) {
		return func(c *delivery.Config) { c.Holder, c.LeaseTTL, c.RequestTimeout = holder, ttl, 2*ttl }
	}
	stopA := h.run(h.config(slowRequests("A")))
	<-inFlight
	stopped := make(chan struct{})
	go func() { stopA(); close(stopped) }()
	h.run(h.config(slowRequests("B")))
	<-stopped
	h.post(100)
	waitFor(t, 20*time.Second, "every message", func() bool { return h.outletState(o.ID).Progress.LastDeliveredMessageNumber == 200 })
	checkExactly(t, rcv.accepted(), 200)
	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	if rcv.overlaps != 0 {
		t.Errorf("%d requests overlapped another", rcv.overlaps)
	}
}
