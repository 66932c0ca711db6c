package delivery_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/clientele/clientele/commands"
	"github.com/clientele/clientele/domain/datatarget"
)

// datasync makes the harness's datatarget a datasync one holding n
// messages, written as the datasync projection writes them; message k's
// update_id is "u<k>" (the receiver reads its number from "n").
func (h *harness) datasync(n int) {
	h.t.Helper()
	ctx := context.Background()
	d, err := h.cmds.CreateDatatarget.Handle(ctx, commands.CreateDatatarget{Principal: h.p, Type: datatarget.Datasync, Name: "crm",
		Settings: datatarget.Settings{Datatype: datatarget.Customers}})
	if err != nil {
		h.t.Fatal(err)
	}
	h.dt = d
	if _, err := h.pool.Exec(ctx, `INSERT INTO datasync_targets (datatarget_id, company_id, datatype, last_message_number, applied_tx, applied_position)
		VALUES ($1, $2, 'customers', $3, '1', 1)`, d.ID, h.p.CompanyID, n); err != nil {
		h.t.Fatal(err)
	}
	if _, err := h.pool.Exec(ctx, `INSERT INTO datasync_messages (datatarget_id, number, company_id, entity_id, update_id, body, posted_at)
		SELECT $1, k, $2, 'c' || k, 'u' || k, json_build_object('update_id', 'u' || k, 'datatype', 'customers',
			'data', json_build_object('id', 'c' || k, 'email', 'person' || k || '@example.com'), 'n', k), now()
		FROM generate_series(1, $3) AS k`, d.ID, h.p.CompanyID, n); err != nil {
		h.t.Fatal(err)
	}
}

// TestDatasyncOutlet delivers a datasync datatarget's messages in order;
// each log entry says after_update (the update before its batch) instead
// of first_message_number. A message anonymised while its batch was in
// flight (its person forgotten) leaves no raw text in the log.
func TestDatasyncOutlet(t *testing.T) {
	h := newHarness(t)
	h.datasync(250)
	rcv := newReceiver(t)
	var requests atomic.Int32
	rcv.setBehaviour(func(_ http.ResponseWriter, _ *http.Request, _ []byte) bool {
		if requests.Add(1) == 2 {
			// The second batch (messages 101 to 200) is on the wire when
			// message 150's person is forgotten.
			if _, err := h.pool.Exec(context.Background(), `UPDATE datasync_messages SET body = '{"update_id":"u150","data":{"id":"c150"}}'
				WHERE datatarget_id = $1 AND number = 150`, h.dt.ID); err != nil {
				t.Error(err)
			}
		}
		return false
	})
	o := h.outlet(rcv.url(), true)
	h.run(h.config())
	waitFor(t, 10*time.Second, "every message", func() bool { return len(rcv.accepted()) >= 250 })
	checkExactly(t, rcv.accepted(), 250)
	waitFor(t, 5*time.Second, "the progress", func() bool { return h.outletState(o.ID).Progress.LastDeliveredMessageNumber == 250 })

	entries := h.entries(o.ID)
	if len(entries) != 3 {
		t.Fatalf("%d entries: %+v", len(entries), entries)
	}
	for i, e := range entries {
		after := ""
		if i > 0 {
			after = fmt.Sprintf("u%d", i*100)
		}
		if e.AfterUpdate != after || e.FirstMessageNumber != 0 || e.Status != datatarget.StatusOK || e.BatchSize != min(100, 250-i*100) {
			t.Errorf("entry %d: after_update %q (want %q), first_message_number %d, %s, size %d", i+1, e.AfterUpdate, after,
				e.FirstMessageNumber, e.Status, e.BatchSize)
		}
		erased := i == 1
		if e.HTTPRequestAvailable == erased || (e.HTTPRequest == "") != erased || (e.HTTPReply == "") != erased {
			t.Errorf("entry %d: request available %v, %d bytes of request, %d of reply; erased: %v", i+1,
				e.HTTPRequestAvailable, len(e.HTTPRequest), len(e.HTTPReply), erased)
		}
		if !erased && !strings.Contains(e.HTTPRequest, fmt.Sprintf(`"c%d"`, i*100+1)) {
			t.Errorf("entry %d: the request lacks message %d", i+1, i*100+1)
		}
	}
}

// TestDatasyncRetryAfterForget: a batch that failed is sent again as the
// queue holds it then, so a person forgotten between the attempts is not
// sent again with the earlier data.
func TestDatasyncRetryAfterForget(t *testing.T) {
	h := newHarness(t)
	h.datasync(5)
	rcv := newReceiver(t)
	var requests atomic.Int32
	var retried atomic.Value
	rcv.setBehaviour(func(w http.ResponseWriter, _ *http.Request, body []byte) bool {
		if requests.Add(1) == 1 {
			if _, err := h.pool.Exec(context.Background(), `UPDATE datasync_messages SET body = '{"update_id":"u3","data":{"id":"c3","is_forgotten":true},"n":3}'
				WHERE datatarget_id = $1 AND number = 3`, h.dt.ID); err != nil {
				t.Error(err)
			}
			w.WriteHeader(http.StatusInternalServerError)
			return true
		}
		retried.Store(string(body))
		return false
	})
	h.outlet(rcv.url(), true)
	h.run(h.config())
	waitFor(t, 10*time.Second, "every message", func() bool { return len(rcv.accepted()) >= 5 })
	body, _ := retried.Load().(string)
	if strings.Contains(body, "person3@example.com") || !strings.Contains(body, "person4@example.com") {
		t.Fatalf("retried batch %s: want message 3 anonymised and message 4 as it was", body)
	}
}

// TestDatasyncParkedRedeliveryReadsTheQueue: a datasync batch parked by
// the failure policy, whose person is forgotten before it is redelivered,
// goes out in the forgotten form: redelivery reads the queue again.
func TestDatasyncParkedRedeliveryReadsTheQueue(t *testing.T) {
	h := newHarness(t)
	h.datasync(3)
	rcv := newReceiver(t)
	var refuse atomic.Bool
	refuse.Store(true)
	var sent atomic.Value // the last body carrying message 2
	rcv.setBehaviour(func(w http.ResponseWriter, _ *http.Request, body []byte) bool {
		if n, err := parseNumbers(body); err != nil || len(n) != 1 || n[0] != 2 {
			return false
		}
		sent.Store(string(body))
		if refuse.Load() {
			http.Error(w, "no", http.StatusInternalServerError)
			return true
		}
		return false
	})
	two := datatarget.FailurePolicy{MaxAttempts: 2}
	o := h.outlet(rcv.url(), false, func(s *datatarget.OutletSpec) { s.FailurePolicy = two })
	h.run(h.config())
	waitFor(t, 10*time.Second, "messages 1 and 3, 2 parked", func() bool {
		st := h.outletState(o.ID).Progress
		return st.LastDeliveredMessageNumber == 3 && st.ParkedCount == 1
	})
	if body, _ := sent.Load().(string); !strings.Contains(body, "person2@example.com") {
		t.Fatalf("message 2 was sent as %s", body)
	}
	// Forgotten meanwhile, as the datasync projection rewrites it.
	if _, err := h.pool.Exec(context.Background(), `UPDATE datasync_messages SET body = '{"update_id":"u2","data":{"id":"c2"},"n":2}'
		WHERE datatarget_id = $1 AND number = 2`, h.dt.ID); err != nil {
		t.Fatal(err)
	}
	refuse.Store(false)
	if err := h.cmds.RedeliverParked.Handle(context.Background(), commands.RedeliverParked{Principal: h.p, DatatargetID: h.dt.ID, OutletID: o.ID}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the redelivery", func() bool { return h.outletState(o.ID).Progress.ParkedCount == 0 })
	if body, _ := sent.Load().(string); strings.Contains(body, "example.com") || !strings.Contains(body, `"c2"`) {
		t.Errorf("redelivered, message 2 was sent as %s", body)
	}
	if got := rcv.accepted(); len(got) != 3 || got[2] != 2 {
		t.Errorf("the receiver accepted %v, want 1, 3, 2", got)
	}
}
