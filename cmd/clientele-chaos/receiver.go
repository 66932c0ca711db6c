package main

import (
	"encoding/json"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
)

// receiver is the webhook receiver of both outlets (paths /batched and
// /single). It fails some requests (500) and answers some slowly, by a
// seeded draw, and keeps every request it accepted, in arrival order.
type receiver struct {
	*httptest.Server
	mu       sync.Mutex
	rnd      *rand.Rand
	accepted map[string][]batch // by outlet path
	failed   int
	slow     int
}

// batch is one accepted request: webhook-id msg_<outlet>_<first>_<size>.
type batch struct {
	First    int      `json:"first"`
	Messages []string `json:"messages"`
}

var webhookID = regexp.MustCompile(`^msg_[^_]+_(\d+)_(\d+)$`)

func newReceiver(seed uint64) *receiver {
	r := &receiver{rnd: rand.New(rand.NewPCG(seed, 1)), accepted: map[string][]batch{}}
	r.Server = httptest.NewServer(http.HandlerFunc(r.serve))
	return r
}

func (r *receiver) serve(w http.ResponseWriter, req *http.Request) {
	var body json.RawMessage
	if err := json.NewDecoder(req.Body).Decode(&body); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	r.mu.Lock()
	draw := r.rnd.IntN(100)
	r.mu.Unlock()
	switch {
	case draw < 6:
		r.mu.Lock()
		r.failed++
		r.mu.Unlock()
		http.Error(w, "chaos: refused", http.StatusInternalServerError)
		return
	case draw < 9:
		r.mu.Lock()
		r.slow++
		r.mu.Unlock()
		time.Sleep(1500 * time.Millisecond) // a slow receiver, the fault itself
	}
	b := batch{}
	if m := webhookID.FindStringSubmatch(req.Header.Get("webhook-id")); m != nil {
		b.First, _ = strconv.Atoi(m[1])
	}
	var list []json.RawMessage
	if strings.HasPrefix(strings.TrimSpace(string(body)), "[") {
		_ = json.Unmarshal(body, &list)
	} else {
		list = []json.RawMessage{body}
	}
	for _, m := range list {
		b.Messages = append(b.Messages, canonical(m))
	}
	r.mu.Lock()
	r.accepted[req.URL.Path] = append(r.accepted[req.URL.Path], b)
	r.mu.Unlock()
}

// batches returns the requests accepted at path.
func (r *receiver) batches(path string) []batch {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]batch(nil), r.accepted[path]...)
}

// delivered is the highest message number accepted at path with every
// one before it.
func (r *receiver) delivered(path string) int {
	next := 1
	for _, b := range r.batches(path) {
		if b.First <= next {
			next = max(next, b.First+len(b.Messages))
		}
	}
	return next - 1
}

// canonical is a JSON value with sorted keys.
func canonical(raw json.RawMessage) string {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return string(raw)
	}
	b, _ := json.Marshal(v)
	return string(b)
}
