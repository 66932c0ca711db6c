package delivery_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
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

// reservedAddr returns a loopback address that nothing listens on and
// that no other socket can take meanwhile: a socket bound to it with
// SO_REUSEPORT that never listens (so a connection is refused), closed
// at the end of the test. listenReserved listens on it beside that
// socket, without the moment a port freed and taken again would leave.
func reservedAddr(t *testing.T) string {
	t.Helper()
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEPORT, 1); err != nil {
		t.Fatal(err)
	}
	if err := unix.Bind(fd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	sa, err := unix.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("127.0.0.1:%d", sa.(*unix.SockaddrInet4).Port)
}

// listenReserved listens on an address of reservedAddr.
func listenReserved(t *testing.T, addr string) net.Listener {
	t.Helper()
	lc := net.ListenConfig{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		if err := c.Control(func(fd uintptr) {
			serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_REUSEPORT, 1)
		}); err != nil {
			return err
		}
		return serr
	}}
	ln, err := lc.Listen(context.Background(), "tcp", addr)
	if err != nil {
		t.Fatalf("listen on %s: %v", addr, err)
	}
	return ln
}
