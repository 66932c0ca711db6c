package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/clientele/clientele/internal/pg/pgtest"
)

// TestTwoNodesPauseAndRewind: two serve processes on one database deliver
// one outlet, whichever holds its lease. Paused through one node, the
// outlet gets nothing from either while messages go on being posted;
// resumed through the other, it gets the first undelivered message next;
// rewound, it gets every message above the number given again, in order.
// No two requests of the outlet are ever in flight at once.
func TestTwoNodesPauseAndRewind(t *testing.T) {
	if testing.Short() {
		t.Skip("starts two serve processes")
	}
	vars := map[string]string{
		"DATABASE_URL":                  pgtest.URL(t),
		"CLIENTELE_DATA_DIR":            t.TempDir(),
		"CLIENTELE_LOG_LEVEL":           "warn",
		"CLIENTELE_WEBHOOK_ALLOW_CIDRS": "127.0.0.0/8",
	}
	getenv := env(vars)
	mustRun(t, getenv, "company", "create", "acme", "--name", "ACME Oy")
	mustRun(t, getenv, "user", "create", "--company", "acme", "--email", "ops@acme.test", "--password", "correct horse battery", "--role", "admin")
	a, b := startNode(t, vars).client, startNode(t, vars).client
	a.token = a.createToken("ops@acme.test", "correct horse battery")
	b.token = a.token

	rcv := newNumberingReceiver()
	defer rcv.Close()
	dt := a.mustJSON("POST", "/api/datatargets/", `{"datatarget_type":"messages","name":"orders"}`)["datatarget"].(map[string]any)["id"].(string)
	outlet := a.mustJSON("POST", "/api/datatargets/"+dt+"/outlets/", fmt.Sprintf(
		`{"outlet_type":"webhook","is_batched":true,"request":{"url":%q}}`, rcv.URL))["outlet"].(map[string]any)["id"].(string)
	path := "/api/datatargets/" + dt + "/outlets/" + outlet + "/"
	post := func(c *outageClient, from, to int) {
		t.Helper()
		for n := from; n <= to; n++ {
			c.mustJSON("POST", "/api/datatargets/"+dt+"/post/", fmt.Sprintf(`{"messages":[{"n":%d}]}`, n))
		}
	}
	state := func(c *outageClient) (string, int) {
		o := c.mustJSON("GET", path, "")["outlet"].(map[string]any)
		return o["state"].(string), int(o["last_delivered_message_number"].(float64))
	}
	delivered := func(want int) func() (bool, string) {
		return func() (bool, string) {
			s, n := state(b)
			return n >= want, fmt.Sprintf("%s, %d delivered", s, n)
		}
	}

	post(a, 1, 20)
	a.waitFor("20 messages delivered", time.Minute, delivered(20))

	a.mustJSON("PATCH", path, `{"enabled": false}`)
	post(b, 21, 40)
	// Paused, the outlet stays where it was while both nodes run their
	// delivery rounds (each polls its outlets every second at most).
	before := rcv.received()
	for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); time.Sleep(250 * time.Millisecond) {
		if s, n := state(a); s != "paused" || n != 20 {
			t.Fatalf("paused: the outlet is %s with %d delivered, want paused at 20", s, n)
		}
	}
	if got := rcv.received(); len(got) != len(before) {
		t.Fatalf("paused, the receiver got %v after %v", got[len(before):], before)
	}

	b.mustJSON("PATCH", path, `{"enabled": true}`)
	a.waitFor("every message delivered after the resumption", time.Minute, delivered(40))
	a.mustJSON("POST", path+"rewind/", `{"after": 15}`)
	post(a, 41, 45)
	b.waitFor("the rewound messages delivered again", time.Minute, func() (bool, string) {
		got := rcv.received()
		return len(got) >= 40+30, fmt.Sprintf("%d messages received", len(got))
	})

	got := rcv.received()
	want := []int{}
	for n := 1; n <= 40; n++ {
		want = append(want, n)
	}
	for n := 16; n <= 45; n++ {
		want = append(want, n)
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("the receiver got\n%v\nwant 1..40, then 16..45 after the rewind", got)
	}
	if n := rcv.mostInFlight(); n != 1 {
		t.Errorf("%d requests of the outlet were in flight at once, want 1", n)
	}
}

// numberingReceiver keeps the n of every message received, in arrival
// order, and the most requests it had in flight at once.
type numberingReceiver struct {
	*httptest.Server
	mu                 sync.Mutex
	numbers            []int
	inFlight, mostSeen int
}

func newNumberingReceiver() *numberingReceiver {
	r := &numberingReceiver{}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		r.inFlight++
		r.mostSeen = max(r.mostSeen, r.inFlight)
		r.mu.Unlock()
		defer func() {
			r.mu.Lock()
			r.inFlight--
			r.mu.Unlock()
		}()
		// Long enough for another node's request to overlap, were the
		// lease not held.
		time.Sleep(20 * time.Millisecond)
		var msgs []struct{ N json.Number }
		if err := json.NewDecoder(req.Body).Decode(&msgs); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		for _, m := range msgs {
			n, _ := strconv.Atoi(m.N.String())
			r.numbers = append(r.numbers, n)
		}
	}))
	return r
}

func (r *numberingReceiver) received() []int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]int(nil), r.numbers...)
}

func (r *numberingReceiver) mostInFlight() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.mostSeen
}
