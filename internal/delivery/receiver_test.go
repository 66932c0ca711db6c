package delivery_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
)

// receiver is the test's webhook receiver. It accepts batches
// {"items": [...]} (or one message for an unbatched outlet) while its
// behave function lets it, and checks that requests never overlap.
type receiver struct {
	t   *testing.T
	srv *httptest.Server

	mu       sync.Mutex
	got      []int // message numbers accepted, in order
	requests int   // requests accepted
	overlaps int   // requests that arrived while another was being served
	inFlight int
	headers  []http.Header
	// behave may answer the request itself (returning true): an error,
	// a delay, anything but acceptance.
	behave func(w http.ResponseWriter, r *http.Request, body []byte) bool
}

func newReceiver(t *testing.T) *receiver {
	r := &receiver{t: t}
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.srv.Close)
	return r
}

// url is the receiver's address for webhooks.
func (r *receiver) url() string { return r.srv.URL + "/hook" }

func (r *receiver) setBehaviour(f func(w http.ResponseWriter, r *http.Request, body []byte) bool) {
	r.mu.Lock()
	r.behave = f
	r.mu.Unlock()
}

func (r *receiver) serve(w http.ResponseWriter, req *http.Request) {
	r.mu.Lock()
	r.inFlight++
	if r.inFlight > 1 {
		r.overlaps++
	}
	behave := r.behave
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		r.inFlight--
		r.mu.Unlock()
	}()
	body, err := io.ReadAll(req.Body)
	if err != nil {
		return
	}
	if behave != nil && behave(w, req, body) {
		return
	}
	numbers, err := parseNumbers(body)
	if err != nil {
		r.t.Errorf("receiver: %v: %s", err, body)
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	r.mu.Lock()
	r.got = append(r.got, numbers...)
	r.requests++
	r.headers = append(r.headers, req.Header.Clone())
	r.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	io.WriteString(w, `{"ok":true}`)
}

// parseNumbers reads the message numbers of a request body.
func parseNumbers(body []byte) ([]int, error) {
	var b struct {
		Source string          `json:"source"`
		Items  json.RawMessage `json:"items"`
	}
	if err := json.Unmarshal(body, &b); err != nil || b.Source != "clientele" {
		return nil, fmt.Errorf("not a rendered template (%v)", err)
	}
	type msg struct {
		N int `json:"n"`
	}
	var list []msg
	if err := json.Unmarshal(b.Items, &list); err != nil {
		var one msg
		if err := json.Unmarshal(b.Items, &one); err != nil {
			return nil, err
		}
		list = []msg{one}
	}
	out := make([]int, len(list))
	for i, m := range list {
		out[i] = m.N
	}
	return out, nil
}

// accepted returns the numbers accepted so far.
func (r *receiver) accepted() []int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]int(nil), r.got...)
}

// checkExactly fails the test unless exactly 1..n were accepted, in order,
// each once.
func checkExactly(t *testing.T, got []int, n int) {
	t.Helper()
	if len(got) != n {
		t.Errorf("received %d messages, want %d", len(got), n)
	}
	for i, g := range got {
		if g != i+1 {
			t.Fatalf("message %d of the stream is %d, want %d", i, g, i+1)
		}
	}
}

// freeAddr returns a loopback address nothing listens on.
func freeAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}
