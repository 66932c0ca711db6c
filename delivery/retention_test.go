package delivery_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/clientele/clientele/commands"
	"github.com/clientele/clientele/delivery"
	"github.com/clientele/clientele/domain"
	"github.com/clientele/clientele/domain/datatarget"
	"github.com/clientele/clientele/readmodels"
)

// prune runs one pass of the pruner as a process whose clock is ahead
// by ahead would, with the retention of configure.
func (h *harness) prune(ahead time.Duration, configure ...func(*delivery.Config)) delivery.Pruned {
	h.t.Helper()
	cfg := h.config(append([]func(*delivery.Config){func(c *delivery.Config) {
		c.Now = func() time.Time { return time.Now().Add(ahead) }
	}}, configure...)...)
	d, err := delivery.New(cfg)
	if err != nil {
		h.t.Fatal(err)
	}
	p, err := d.Prune(context.Background())
	if err != nil {
		h.t.Fatal(err)
	}
	return p
}

// keepDays sets the datatarget's retention of delivered messages.
func (h *harness) keepDays(days int) {
	h.t.Helper()
	if _, err := h.cmds.UpdateDatatarget.Handle(context.Background(), commands.UpdateDatatarget{Principal: h.p, DatatargetID: h.dt.ID,
		Patch: datatarget.Patch{MessageRetentionDays: &days}}); err != nil {
		h.t.Fatal(err)
	}
}

// retrieve reads the queue after after as retrieval does.
func (h *harness) retrieve(after int64) (readmodels.MessagePage, error) {
	return readmodels.NewDatatargets(h.pool, testKeys(h.t)).Messages(context.Background(), h.p.CompanyID, h.dt.ID, after, datatarget.MaxRetrieveLimit)
}

// numbers are the "n" of each message of the page.
func numbers(t *testing.T, page readmodels.MessagePage) []int {
	t.Helper()
	out := make([]int, 0, len(page.Messages))
	for _, m := range page.Messages {
		var v struct{ N int }
		if err := json.Unmarshal(m, &v); err != nil {
			t.Fatal(err)
		}
		out = append(out, v.N)
	}
	return out
}

// wantRange fails unless the page holds exactly the messages first to
// last, as numbered when posted.
func wantRange(t *testing.T, page readmodels.MessagePage, err error, first, last int) {
	t.Helper()
	if err != nil {
		t.Fatalf("retrieve from %d: %v", first, err)
	}
	got := numbers(t, page)
	if len(got) != last-first+1 || got[0] != first || got[len(got)-1] != last || page.LastMessageNumber != int64(last) {
		t.Fatalf("retrieve: messages %v (last_message_number %d), want %d to %d", got, page.LastMessageNumber, first, last)
	}
}

// wantGone fails unless retrieving after after is Gone naming first as
// the first message kept.
func wantGone(t *testing.T, err error, first int) {
	t.Helper()
	if domain.ErrorCode(err) != domain.Gone || !strings.Contains(err.Error(), fmt.Sprintf("the first message kept is %d", first)) {
		t.Fatalf("retrieve below the kept range: %v, want gone naming %d", err, first)
	}
}

// TestPruneMessages: a datatarget keeps its messages a day once every
// outlet delivered them. Pruning removes only what the slowest outlet
// has delivered (an outlet stuck on message 41 keeps 40 and after),
// oldest first; numbers never change; retrieval below the kept range is
// Gone; the outlets' positions and entry counts stay; the log entries of
// pruned messages go. Once every outlet caught up only the last message
// stays, and a new outlet, or one rewound below it, starts there.
func TestPruneMessages(t *testing.T) {
	h := newHarness(t)
	h.keepDays(1)
	fast, slow := newReceiver(t), newReceiver(t)
	var refuse atomic.Bool
	refuse.Store(true)
	slow.setBehaviour(func(w http.ResponseWriter, _ *http.Request, body []byte) bool {
		if refuse.Load() && strings.Contains(string(body), `"n":41}`) {
			http.Error(w, "not yet", http.StatusServiceUnavailable)
			return true
		}
		return false
	})
	a, b := h.outlet(fast.url(), false), h.outlet(slow.url(), false)
	h.post(100)
	h.run(h.config())
	waitFor(t, 20*time.Second, "the fast outlet", func() bool { return h.outletState(a.ID).Progress.LastDeliveredMessageNumber == 100 })
	waitFor(t, 10*time.Second, "the slow outlet stuck on 41", func() bool {
		o := h.outletState(b.ID)
		return o.Progress.LastDeliveredMessageNumber == 40 && o.Progress.State == "retrying"
	})

	if p := h.prune(0); p != (delivery.Pruned{}) {
		t.Errorf("nothing is a day old yet, pruned %+v", p)
	}
	// Two days later: 1 to 39 go (40 is the last the slow outlet got).
	p := h.prune(48*time.Hour, func(c *delivery.Config) { c.Retention.Batch = 7 })
	if p.Messages != 39 || p.Entries != 2*39 || p.Texts != 0 {
		t.Errorf("pruned %+v, want 39 messages, 78 entries (39 per outlet), no texts", p)
	}
	_, err := h.retrieve(0)
	wantGone(t, err, 40)
	_, err = h.retrieve(38)
	wantGone(t, err, 40)
	page, err := h.retrieve(39)
	wantRange(t, page, err, 40, 100)
	if o := h.outletState(a.ID); o.Progress.LastDeliveredMessageNumber != 100 || o.Progress.DeliveredBatchCount != 100 {
		t.Errorf("the fast outlet after pruning: %+v", o.Progress)
	}
	if o := h.outletState(b.ID); o.Progress.LastDeliveredMessageNumber != 40 {
		t.Errorf("the slow outlet after pruning: %+v", o.Progress)
	}
	q := readmodels.NewDatatargets(h.pool, testKeys(t))
	log, err := q.Log(context.Background(), readmodels.LogQuery{CompanyID: h.p.CompanyID, DatatargetID: h.dt.ID, OutletID: a.ID, Limit: 1000})
	if err != nil || log.TotalCount != 100 || len(log.Entries) != 61 || log.Entries[0].EntryNumber != 40 || log.Entries[0].FirstMessageNumber != 40 {
		t.Fatalf("the fast outlet's log after pruning: total %d, %d entries from %+v, %v", log.TotalCount, len(log.Entries), log.Entries[0], err)
	}

	// The slow outlet catches up: everything but the last message goes.
	refuse.Store(false)
	waitFor(t, 20*time.Second, "the slow outlet", func() bool { return h.outletState(b.ID).Progress.LastDeliveredMessageNumber == 100 })
	checkExactly(t, slow.accepted(), 100)
	if p := h.prune(48 * time.Hour); p.Messages != 60 {
		t.Errorf("pruned %+v, want 60 messages", p)
	}
	page, err = h.retrieve(99)
	wantRange(t, page, err, 100, 100)
	_, err = h.retrieve(98)
	wantGone(t, err, 100)

	// A new outlet, and an outlet rewound below what is kept, start at
	// the first message kept; messages posted later follow as usual.
	late := newReceiver(t)
	c := h.outlet(late.url(), false)
	if err := h.cmds.RewindOutlet.Handle(context.Background(), commands.RewindOutlet{Principal: h.p, DatatargetID: h.dt.ID, OutletID: a.ID,
		After: 10, Position: 100}); err != nil {
		t.Fatal(err)
	}
	h.post(2)
	waitFor(t, 10*time.Second, "the new outlet", func() bool { return h.outletState(c.ID).Progress.LastDeliveredMessageNumber == 102 })
	waitFor(t, 10*time.Second, "the rewound outlet", func() bool { return len(fast.accepted()) == 103 })
	if got := late.accepted(); fmt.Sprint(got) != "[100 101 102]" {
		t.Errorf("the new outlet received %v, want [100 101 102]", got)
	}
	if got := fast.accepted()[100:]; fmt.Sprint(got) != "[100 101 102]" {
		t.Errorf("the rewound outlet received %v after the rewind, want [100 101 102]", got)
	}
}

// TestPruneKeepsParkedBatches: a parked batch is not delivered, so its
// messages, and those after, stay until it is discarded.
func TestPruneKeepsParkedBatches(t *testing.T) {
	h := newHarness(t)
	h.keepDays(1)
	rcv := newReceiver(t)
	rcv.setBehaviour(func(w http.ResponseWriter, _ *http.Request, body []byte) bool {
		if strings.Contains(string(body), `"n":5}`) {
			http.Error(w, "never", http.StatusUnprocessableEntity)
			return true
		}
		return false
	})
	o := h.outlet(rcv.url(), false, func(s *datatarget.OutletSpec) { s.FailurePolicy = datatarget.FailurePolicy{MaxAttempts: 2} })
	h.post(10)
	h.run(h.config())
	waitFor(t, 10*time.Second, "delivery past the parked batch", func() bool {
		p := h.outletState(o.ID).Progress
		return p.LastDeliveredMessageNumber == 10 && p.ParkedCount == 1
	})
	if p := h.prune(48 * time.Hour); p.Messages != 3 {
		t.Errorf("pruned %+v, want messages 1 to 3 (5 is parked)", p)
	}
	page, err := h.retrieve(3)
	wantRange(t, page, err, 4, 10)

	parked, err := readmodels.NewDatatargets(h.pool, testKeys(t)).Parked(context.Background(), h.p.CompanyID, h.dt.ID, o.ID)
	if err != nil || len(parked) != 1 {
		t.Fatalf("parked %+v %v", parked, err)
	}
	if err := h.cmds.DiscardParked.Handle(context.Background(), commands.DiscardParked{Principal: h.p, DatatargetID: h.dt.ID, OutletID: o.ID,
		ParkedID: parked[0].ID}); err != nil {
		t.Fatal(err)
	}
	if p := h.prune(48 * time.Hour); p.Messages != 6 {
		t.Errorf("pruned %+v after the discarding, want messages 4 to 9", p)
	}
	page, err = h.retrieve(9)
	wantRange(t, page, err, 10, 10)
}

// TestPruneRawTexts: the raw texts of successful attempts go after 30
// days, those of failures after 90, in bounded batches; the entries stay.
func TestPruneRawTexts(t *testing.T) {
	h := newHarness(t)
	rcv := newReceiver(t)
	var requests atomic.Int32
	rcv.setBehaviour(func(w http.ResponseWriter, _ *http.Request, _ []byte) bool {
		if requests.Add(1) <= 2 {
			http.Error(w, "try again", http.StatusInternalServerError)
			return true
		}
		return false
	})
	o := h.outlet(rcv.url(), false)
	h.post(3)
	h.run(h.config())
	waitFor(t, 10*time.Second, "delivery", func() bool { return h.outletState(o.ID).Progress.LastDeliveredMessageNumber == 3 })

	kept := func() (ok, failed int) {
		t.Helper()
		for _, e := range h.entries(o.ID) {
			has := e.HTTPRequestAvailable && strings.Contains(e.HTTPRequest, "POST /hook") && e.HTTPReply != ""
			if !has && (e.HTTPRequest != "" || e.HTTPReply != "") {
				t.Errorf("entry %d: texts half pruned: %+v", e.EntryNumber, e)
			}
			switch {
			case has && e.Status == datatarget.StatusOK:
				ok++
			case has:
				failed++
			}
		}
		return ok, failed
	}
	if ok, failed := kept(); ok != 3 || failed != 2 {
		t.Fatalf("before pruning: %d successes and %d failures with texts", ok, failed)
	}
	batch := func(c *delivery.Config) { c.Retention.Batch = 2 }
	if p := h.prune(29*24*time.Hour, batch); p.Texts != 0 {
		t.Errorf("29 days later, pruned %+v", p)
	}
	if p := h.prune(31*24*time.Hour, batch); p.Texts != 3 {
		t.Errorf("31 days later, pruned %+v, want the 3 successes' texts", p)
	}
	if ok, failed := kept(); ok != 0 || failed != 2 {
		t.Errorf("after 31 days: %d successes and %d failures with texts", ok, failed)
	}
	if p := h.prune(91*24*time.Hour, batch); p.Texts != 2 {
		t.Errorf("91 days later, pruned %+v, want the 2 failures' texts", p)
	}
	var left int
	if err := h.pool.QueryRow(context.Background(), `SELECT count(*) FROM outlet_log WHERE outlet_id = $1
		AND (raw_key IS NOT NULL OR sealed_request IS NOT NULL OR sealed_reply IS NOT NULL)`, o.ID).Scan(&left); err != nil || left != 0 {
		t.Errorf("%d entries still hold sealed texts (%v)", left, err)
	}
	if n := len(h.entries(o.ID)); n != 5 {
		t.Errorf("%d entries after pruning their texts, want 5", n)
	}
}

// TestPruneDatasync: a datasync datatarget pruned keeps numbering its
// messages on, and its outlet's next batch still names the update before
// it (the last delivered message is kept for that).
func TestPruneDatasync(t *testing.T) {
	h := newHarness(t)
	h.datasync(50)
	h.keepDays(1)
	rcv := newReceiver(t)
	o := h.outlet(rcv.url(), true)
	h.run(h.config())
	waitFor(t, 10*time.Second, "delivery", func() bool { return h.outletState(o.ID).Progress.LastDeliveredMessageNumber == 50 })
	if p := h.prune(48 * time.Hour); p.Messages != 49 {
		t.Errorf("pruned %+v, want 49 messages", p)
	}
	_, err := h.retrieve(10)
	wantGone(t, err, 50)

	// The projection writes ten more changes.
	ctx := context.Background()
	if _, err := h.pool.Exec(ctx, `INSERT INTO datasync_messages (datatarget_id, number, company_id, entity_id, update_id, body, posted_at)
		SELECT $1, k, $2, 'c' || k, 'u' || k, json_build_object('update_id', 'u' || k, 'n', k), now() FROM generate_series(51, 60) AS k`,
		h.dt.ID, h.p.CompanyID); err != nil {
		t.Fatal(err)
	}
	if _, err := h.pool.Exec(ctx, `UPDATE datasync_targets SET last_message_number = 60 WHERE datatarget_id = $1`, h.dt.ID); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the new changes", func() bool { return h.outletState(o.ID).Progress.LastDeliveredMessageNumber == 60 })
	checkExactly(t, rcv.accepted(), 60)
	entries := h.entries(o.ID)
	if last := entries[len(entries)-1]; last.AfterUpdate != "u50" || last.BatchSize != 10 {
		t.Errorf("the batch after pruning: after_update %q, size %d; want u50, 10", last.AfterUpdate, last.BatchSize)
	}
	page, err := h.retrieve(49)
	wantRange(t, page, err, 50, 60)
	if d := h.outletState(o.ID); d.Progress.LastDeliveredMessageNumber != 60 {
		t.Errorf("progress %+v", d.Progress)
	}
}
