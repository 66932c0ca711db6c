package main

import (
	"encoding/json"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
)

// receiver is the webhook receiver of every outlet (a path each). It
// fails some requests (500) and answers some slowly, by a seeded draw,
// and keeps every request it got, in arrival order, whatever it
// answered: the attempts that the outlets' logs must show
// (checkAttempts).
type receiver struct {
	*httptest.Server
	mu       sync.Mutex
	rnd      *rand.Rand
	attempts map[string][]attempt // by outlet path
	failed   int
	slow     int
	// sender names the node that holds the other end of a connection
	// from remote to local (the receiver's address); "" when unknown.
	// The answers are kept per connection, dropped when it closes.
	sender  func(remote, local string) string
	senders map[string]string
}

// attempt is one request the receiver got: when its headers arrived,
// the node that sent it (the owner of the connection's other end, ""
// when it could not be told), its batch as its webhook-id names it
// (msg_<outlet>_<first>_<size>), the messages of its body, and the
// status answered (0: the connection was closed before the answer).
type attempt struct {
	At       time.Time `json:"at"`
	Node     string    `json:"node,omitempty"`
	First    int       `json:"first"`
	Size     int       `json:"size"`
	Messages []string  `json:"messages,omitempty"`
	Status   int       `json:"status"`
}

// batch is one request answered 200: its first message and its
// messages.
type batch struct {
	First    int      `json:"first"`
	Messages []string `json:"messages"`
}

var webhookID = regexp.MustCompile(`^msg_[^_]+_(\d+)_(\d+)$`)

func newReceiver(seed uint64, sender func(remote, local string) string) *receiver {
	r := &receiver{rnd: rand.New(rand.NewPCG(seed, 1)), attempts: map[string][]attempt{}, sender: sender, senders: map[string]string{}}
	r.Server = httptest.NewUnstartedServer(http.HandlerFunc(r.serve))
	r.Config.ConnState = func(c net.Conn, s http.ConnState) {
		if s == http.StateClosed || s == http.StateHijacked {
			r.mu.Lock()
			delete(r.senders, c.RemoteAddr().String())
			r.mu.Unlock()
		}
	}
	r.Start()
	return r
}

func (r *receiver) serve(w http.ResponseWriter, req *http.Request) {
	a := attempt{At: time.Now(), Node: r.senderOf(req.RemoteAddr)}
	if m := webhookID.FindStringSubmatch(req.Header.Get("webhook-id")); m != nil {
		a.First, _ = strconv.Atoi(m[1])
		a.Size, _ = strconv.Atoi(m[2])
	}
	defer func() {
		r.mu.Lock()
		r.attempts[req.URL.Path] = append(r.attempts[req.URL.Path], a)
		r.mu.Unlock()
	}()
	// answer writes status unless the sender is gone already.
	answer := func(status int, text string) {
		if req.Context().Err() != nil {
			return // a.Status stays 0: nobody got an answer
		}
		a.Status = status
		if status != http.StatusOK {
			http.Error(w, text, status)
		}
	}
	var body json.RawMessage
	if err := json.NewDecoder(req.Body).Decode(&body); err != nil {
		answer(http.StatusBadRequest, err.Error())
		return
	}
	var list []json.RawMessage
	if strings.HasPrefix(strings.TrimSpace(string(body)), "[") {
		_ = json.Unmarshal(body, &list)
	} else {
		list = []json.RawMessage{body}
	}
	for _, m := range list {
		a.Messages = append(a.Messages, canonical(m))
	}
	r.mu.Lock()
	draw := r.rnd.IntN(100)
	r.mu.Unlock()
	switch {
	case draw < 6:
		r.mu.Lock()
		r.failed++
		r.mu.Unlock()
		answer(http.StatusInternalServerError, "chaos: refused")
		return
	case draw < 9:
		r.mu.Lock()
		r.slow++
		r.mu.Unlock()
		time.Sleep(slowAnswer) // a slow receiver, the fault itself
	}
	answer(http.StatusOK, "")
}

// slowAnswer is how long the receiver takes over a slow answer.
const slowAnswer = 1500 * time.Millisecond

// senderOf is the node at the other end of the connection from remote,
// asked once per connection.
func (r *receiver) senderOf(remote string) string {
	r.mu.Lock()
	node, ok := r.senders[remote]
	r.mu.Unlock()
	if ok || r.sender == nil {
		return node
	}
	node = r.sender(remote, r.Listener.Addr().String())
	r.mu.Lock()
	r.senders[remote] = node
	r.mu.Unlock()
	return node
}

// requests returns every request got at path, in arrival order.
func (r *receiver) requests(path string) []attempt {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]attempt(nil), r.attempts[path]...)
}

// batches returns the requests answered 200 at path.
func (r *receiver) batches(path string) []batch {
	return accepted(r.requests(path))
}

// accepted are the batches of the attempts answered 200.
func accepted(attempts []attempt) []batch {
	var out []batch
	for _, a := range attempts {
		if a.Status == http.StatusOK {
			out = append(out, batch{First: a.First, Messages: a.Messages})
		}
	}
	return out
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
