package console_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/clientele/clientele/commands"
	"github.com/clientele/clientele/domain/datatarget"
)

// parkingReceiver is a webhook receiver that refuses (422) the messages
// {"order": n} whose n it is told to, and counts what it accepted.
type parkingReceiver struct {
	mu       sync.Mutex
	refuse   map[int]bool
	accepted map[int]int // order -> times accepted
}

func (r *parkingReceiver) serve(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	var m struct{ Order int }
	_ = json.Unmarshal(body, &m)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.refuse[m.Order] {
		http.Error(w, "order "+itoa(m.Order)+" is refused", http.StatusUnprocessableEntity)
		return
	}
	r.accepted[m.Order]++
}

func (r *parkingReceiver) acceptAll() {
	r.mu.Lock()
	r.refuse = map[int]bool{}
	r.mu.Unlock()
}

func (r *parkingReceiver) times(order int) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.accepted[order]
}

// parkingOutlet creates a messages datatarget of acme with n messages
// and an outlet that parks a batch after one failed attempt, to a
// receiver refusing the orders given; it waits until those are parked
// and the rest delivered.
func (e *env) parkingOutlet(n int, refused ...int) (datatargetID, outletID string, rcv *parkingReceiver) {
	e.t.Helper()
	ctx := context.Background()
	rcv = &parkingReceiver{refuse: map[int]bool{}, accepted: map[int]int{}}
	for _, o := range refused {
		rcv.refuse[o] = true
	}
	srv := httptest.NewServer(http.HandlerFunc(rcv.serve))
	e.t.Cleanup(srv.Close)
	p := e.adminPrincipal()
	d, err := e.cmds.CreateDatatarget.Handle(ctx, commands.CreateDatatarget{Principal: p, Type: datatarget.Messages, Name: "ERP orders"})
	if err != nil {
		e.t.Fatal(err)
	}
	msgs := make([]json.RawMessage, n)
	for i := range msgs {
		msgs[i] = json.RawMessage(`{"order": ` + itoa(i+1) + `}`)
	}
	if _, err := e.cmds.PostDatatargetMessages.Handle(ctx, commands.PostDatatargetMessages{Principal: p, DatatargetID: d.ID, Messages: msgs}); err != nil {
		e.t.Fatal(err)
	}
	o, err := e.cmds.CreateOutlet.Handle(ctx, commands.CreateOutlet{Principal: p, DatatargetID: d.ID, Spec: datatarget.OutletSpec{
		Type: "webhook", Request: datatarget.Request{URL: srv.URL + "/hook", Method: "POST"},
		FailurePolicy: datatarget.FailurePolicy{MaxAttempts: 1},
	}})
	if err != nil {
		e.t.Fatal(err)
	}
	e.deliver()
	e.waitFor("the refused batches parked", `SELECT count(*) = $2 AND (SELECT last_delivered_message_number = $3 FROM outlet_deliveries WHERE outlet_id = $1)
		FROM outlet_parked WHERE outlet_id = $1`, o.ID, len(refused), n)
	return d.ID, o.ID, rcv
}

// confirm follows the control link sel on the outlet page, checks that
// its confirmation page warns, confirms, and waits for the outlet page.
func confirm(t *testing.T, ctx context.Context, what, sel string, before ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	var warning string
	steps := []chromedp.Action[chromedp.Void]{
		chromedp.WaitVisible(css(sel)),
		chromedp.Click(css(sel)),
		chromedp.WaitVisible(css("#warning")),
		textInto(css("#warning"), &warning),
	}
	steps = append(steps, before...)
	steps = append(steps, chromedp.Click(css("#confirm")), chromedp.WaitVisible(css("#outlet-done")))
	run(t, ctx, what, steps...)
	if warning == "" {
		t.Errorf("%s: the confirmation says nothing", what)
	}
}

// TestBrowserOutletControls: an admin pauses and resumes an outlet,
// discards a parked batch, redelivers one and then all, and rewinds, each
// from the outlet page through a confirmation; the outlet page shows the
// state, the parked count and each parked batch with its last failure.
func TestBrowserOutletControls(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	dt, oid, rcv := e.parkingOutlet(8, 2, 4, 6)
	page := "/console/datatargets/" + dt + "/outlets/" + oid
	ctx := tab(t)
	browserLogIn(t, ctx, e, acmeHost, e.admin.Email, "")
	var state, count, parked string
	run(t, ctx, "open the outlet",
		chromedp.Navigate(e.url(acmeHost, page)),
		chromedp.WaitVisible(css("#outlet-control")),
		shot("outlet-control"),
		textInto(css("#delivery-state"), &state),
		textInto(css("#parked-count"), &count),
		textInto(css("#parked tbody"), &parked),
	)
	if state != "delivering" || count != "3" || !strings.Contains(parked, "HTTP 422") || !strings.Contains(parked, "2–2") {
		t.Fatalf("the outlet page: state %q, parked %q: %q", state, count, parked)
	}

	enabled := func() bool {
		t.Helper()
		var on bool
		if err := e.pool.QueryRow(context.Background(), `SELECT enabled FROM datatarget_outlets WHERE id = $1`, oid).Scan(&on); err != nil {
			t.Fatal(err)
		}
		return on
	}
	confirm(t, ctx, "pause", "#pause")
	run(t, ctx, "read the paused outlet", chromedp.WaitVisible(css("#resume")), textInto(css("#delivery-state"), &state))
	if state != "paused" || enabled() {
		t.Fatalf("after pausing: state %q, enabled %v", state, enabled())
	}
	confirm(t, ctx, "resume", "#resume")
	run(t, ctx, "read the resumed outlet", chromedp.WaitVisible(css("#pause")), textInto(css("#delivery-state"), &state))
	if state != "delivering" || !enabled() {
		t.Fatalf("after resuming: state %q, enabled %v", state, enabled())
	}

	// Discard the batch of order 6, the last parked.
	confirm(t, ctx, "discard", "#parked tbody tr:last-child a.danger")
	e.waitFor("two parked", `SELECT count(*) = 2 AND NOT bool_or(first_message_number = 6) FROM outlet_parked WHERE outlet_id = $1`, oid)

	// The receiver takes everything now: redeliver the first, then all.
	rcv.acceptAll()
	confirm(t, ctx, "redeliver one", "#parked tbody tr:first-child a.button:not(.danger)")
	e.waitFor("the first parked batch delivered", `SELECT count(*) = 1 FROM outlet_parked WHERE outlet_id = $1`, oid)
	if rcv.times(2) != 1 || rcv.times(4) != 0 {
		t.Fatalf("after redelivering one: order 2 accepted %d times, order 4 %d", rcv.times(2), rcv.times(4))
	}
	run(t, ctx, "reload", chromedp.Navigate(e.url(acmeHost, page)), chromedp.WaitVisible(css("#outlet-control")))
	confirm(t, ctx, "redeliver all", "#redeliver-all")
	e.waitFor("every parked batch delivered", `SELECT count(*) = 0 FROM outlet_parked WHERE outlet_id = $1`, oid)
	if rcv.times(4) != 1 || rcv.times(6) != 0 {
		t.Fatalf("after redelivering all: order 4 accepted %d times, order 6 %d (discarded)", rcv.times(4), rcv.times(6))
	}

	// Rewind to 5: orders 6 to 8 are sent again (6 for the first time).
	confirm(t, ctx, "rewind", "#rewind", chromedp.SetValue(css("#after"), "5"))
	e.waitFor("the rewind", `SELECT rewind_applied > 0 AND last_delivered_message_number = 8 FROM outlet_deliveries WHERE outlet_id = $1`, oid)
	if rcv.times(5) != 1 || rcv.times(6) != 1 || rcv.times(7) != 2 || rcv.times(8) != 2 {
		t.Fatalf("after rewinding to 5: orders 5-8 accepted %d %d %d %d times", rcv.times(5), rcv.times(6), rcv.times(7), rcv.times(8))
	}
	run(t, ctx, "read the outlet", chromedp.Navigate(e.url(acmeHost, page)), chromedp.WaitVisible(css("#outlet-control")),
		textInto(css("#parked-count"), &count))
	if count != "0" {
		t.Errorf("parked count %q after every redelivery", count)
	}
}

// TestBrowserOutletControlsStaff: staff see an outlet's state and parked
// batches but no control, and the confirmation pages answer them 403.
func TestBrowserOutletControlsStaff(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	dt, oid, _ := e.parkingOutlet(3, 2)
	page := "/console/datatargets/" + dt + "/outlets/" + oid
	ctx := tab(t)
	browserLogIn(t, ctx, e, acmeHost, e.staff.Email, "")
	var parked string
	var controls int
	run(t, ctx, "open the outlet as staff",
		chromedp.Navigate(e.url(acmeHost, page)),
		chromedp.WaitVisible(css("#outlet-control")),
		textInto(css("#parked tbody"), &parked),
		evalInto(`document.querySelectorAll("#outlet-actions, #outlet-control a.button, #outlet-control form").length`, &controls),
	)
	if controls != 0 || !strings.Contains(parked, "HTTP 422") {
		t.Fatalf("staff see %d controls; parked %q", controls, parked)
	}
	for _, action := range []string{"pause", "rewind", "redeliver", "discard?parked=1"} {
		var title string
		run(t, ctx, "open the "+action+" confirmation as staff",
			chromedp.Navigate(e.url(acmeHost, page+"/control/"+action)),
			chromedp.WaitVisible(css("#error-title")),
			textInto(css("#error-title"), &title),
		)
		if !strings.Contains(title, "403") {
			t.Errorf("staff at %s see %q, want 403", action, title)
		}
	}
	// A forged post is refused as well, and changes nothing.
	c := e.client(acmeHost)
	c.logIn(e.staff.Email, "")
	res, _ := c.do(http.MethodPost, page+"/control/pause", nil, nil)
	if res.StatusCode != http.StatusForbidden {
		t.Errorf("staff posting a pause: %d", res.StatusCode)
	}
	e.waitFor("the outlet still enabled", `SELECT enabled FROM datatarget_outlets WHERE id = $1`, oid)
}
