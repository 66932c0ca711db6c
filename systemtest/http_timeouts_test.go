package systemtest_test

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/clientele/clientele/api"
	"github.com/clientele/clientele/app"
)

// listen serves e's API with the http.Server that serve uses
// (Server.HTTPServer) on a loopback port, and returns its address.
func (e *env) listen() string {
	e.t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		e.t.Fatal(err)
	}
	srv := e.api.HTTPServer()
	go srv.Serve(ln) //nolint:errcheck // ends with Close
	e.t.Cleanup(func() { srv.Close() })
	return ln.Addr().String()
}

func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// closedBy waits until the server closes conn and returns what it sent
// before, failing the test if that takes more than guard.
func closedBy(t *testing.T, conn net.Conn, r io.Reader, guard time.Duration) []byte {
	t.Helper()
	if err := conn.SetReadDeadline(time.Now().Add(guard)); err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(r)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("the server did not close the connection within %v", guard)
	}
	return got
}

// trickle writes s to conn a byte every interval until it is all written
// or the connection fails, and reports on the channel how much it wrote.
func trickle(conn net.Conn, s string, interval time.Duration) <-chan int {
	done := make(chan int, 1)
	go func() {
		for i := range len(s) {
			if _, err := conn.Write([]byte{s[i]}); err != nil {
				done <- i
				return
			}
			time.Sleep(interval) // the slow client's pace, not a wait for the server
		}
		done <- len(s)
	}()
	return done
}

// TestSlowHeadersCutOff: a client sending its headers a byte at a time,
// however steadily, is cut off once Config.ReadHeaderTimeout has passed.
func TestSlowHeadersCutOff(t *testing.T) {
	const timeout = 300 * time.Millisecond
	e := newEnv(t, func(c *api.Config, _ *app.Application) { c.ReadHeaderTimeout = timeout })
	addr := e.listen()
	headers := "GET /healthz HTTP/1.1\r\nHost: acme.localhost\r\nX-Slow: " + strings.Repeat("a", 500) + "\r\n\r\n"
	start := time.Now() // before the server accepts, and so starts its clock
	conn := dial(t, addr)
	written := trickle(conn, headers, 10*time.Millisecond)
	got := closedBy(t, conn, conn, 30*time.Second)
	elapsed := time.Since(start)
	conn.Close()
	if n := <-written; n == len(headers) {
		t.Fatalf("the whole header was sent over %v before the server closed", elapsed)
	}
	// net/http closes silently when the deadline falls between reads, and
	// answers 400 before closing when it falls inside a header line.
	if len(got) != 0 && !strings.HasPrefix(string(got), "HTTP/1.1 400 ") {
		t.Errorf("the server answered %q; want the connection closed", got)
	}
	if elapsed < timeout {
		t.Errorf("closed after %v, before the timeout of %v", elapsed, timeout)
	}
}

// TestIdleConnectionClosed: a kept-alive connection without a next request
// is closed after Config.IdleTimeout.
func TestIdleConnectionClosed(t *testing.T) {
	const timeout = 300 * time.Millisecond
	e := newEnv(t, func(c *api.Config, _ *app.Application) { c.IdleTimeout = timeout })
	conn := dial(t, e.listen())
	idle := time.Now() // before the server's idle clock starts, after its answer
	if _, err := io.WriteString(conn, "GET /healthz HTTP/1.1\r\nHost: acme.localhost\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(conn)
	res, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK || res.Close {
		t.Fatalf("status %d, close %v; want 200 on a kept-alive connection", res.StatusCode, res.Close)
	}
	if got := closedBy(t, conn, br, 30*time.Second); len(got) != 0 {
		t.Errorf("the server sent %q on an idle connection", got)
	}
	if elapsed := time.Since(idle); elapsed < timeout {
		t.Errorf("closed after %v idle, before the timeout of %v", elapsed, timeout)
	}
}

// postSlowly sends a request whose body is trickled a byte at a time and
// returns the answer.
func postSlowly(t *testing.T, conn net.Conn, br *bufio.Reader, path, token, body string, interval time.Duration) (*http.Response, []byte) {
	t.Helper()
	head := fmt.Sprintf("POST %s HTTP/1.1\r\nHost: acme.localhost\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n",
		path, token, len(body))
	if _, err := io.WriteString(conn, head); err != nil {
		t.Fatal(err)
	}
	trickle(conn, body, interval)
	if err := conn.SetReadDeadline(time.Now().Add(30 * time.Second)); err != nil {
		t.Fatal(err)
	}
	res, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res, b
}

// TestSlowBodyCutOff: a request body (other than an upload's) must have
// arrived within Config.ReadTimeout of the request; a slower one is a 400.
func TestSlowBodyCutOff(t *testing.T) {
	const timeout = 500 * time.Millisecond
	e := newEnv(t, func(c *api.Config, _ *app.Application) { c.ReadTimeout = timeout })
	token := e.userToken(e.admin, acmeHost)
	conn := dial(t, e.listen())
	body := `{"integration_name": "shop", "parameters": {"name": "slow"}}` + strings.Repeat(" ", 200)
	start := time.Now()
	res, b := postSlowly(t, conn, bufio.NewReader(conn), "/api/integrations/", token, body, 10*time.Millisecond)
	elapsed := time.Since(start)
	var eb errorBody
	if err := json.Unmarshal(b, &eb); err != nil || res.StatusCode != http.StatusBadRequest || eb.Error.Code != "invalid_request" {
		t.Fatalf("status %d, body %s; want 400 invalid_request", res.StatusCode, b)
	}
	if elapsed < timeout {
		t.Errorf("answered after %v, before the timeout of %v", elapsed, timeout)
	}
}

// TestUploadMayStreamSlowly: an upload's body may take longer than
// Config.ReadTimeout as long as it keeps coming, even on a connection
// whose earlier request set a write deadline; a pause longer than
// ReadTimeout ends it with a 400.
func TestUploadMayStreamSlowly(t *testing.T) {
	const timeout = time.Second
	// Alone: the write timeout of a second is every answer's, the log-in's
	// included, which took longer than that among parallel tests.
	e := newSerialEnv(t, func(c *api.Config, _ *app.Application) { c.ReadTimeout, c.WriteTimeout = timeout, timeout })
	token := e.userToken(e.admin, acmeHost)
	conn := dial(t, e.listen())
	br := bufio.NewReader(conn)

	if _, err := io.WriteString(conn, "GET /healthz HTTP/1.1\r\nHost: acme.localhost\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	res, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, res.Body)
	res.Body.Close()

	body := `[{"external_id": "slow-1", "email": "slow@example.com"}]` + strings.Repeat(" ", 40)
	start := time.Now()
	res, b := postSlowly(t, conn, br, "/api/customers/upload/", token, body, 25*time.Millisecond)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("slow upload: status %d, body %s; want 200", res.StatusCode, b)
	}
	if elapsed := time.Since(start); elapsed < 2*timeout {
		t.Fatalf("the upload took %v, not over twice the read timeout of %v: the test proves nothing", elapsed, timeout)
	}

	// A stalled upload: half the body, then nothing.
	stalled := dial(t, e.listen())
	head := fmt.Sprintf("POST /api/customers/upload/ HTTP/1.1\r\nHost: acme.localhost\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s",
		token, len(body), body[:len(body)/2])
	if _, err := io.WriteString(stalled, head); err != nil {
		t.Fatal(err)
	}
	if err := stalled.SetReadDeadline(time.Now().Add(30 * time.Second)); err != nil {
		t.Fatal(err)
	}
	res, err = http.ReadResponse(bufio.NewReader(stalled), nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ = io.ReadAll(res.Body)
	res.Body.Close()
	var eb errorBody
	if err := json.Unmarshal(b, &eb); err != nil || res.StatusCode != http.StatusBadRequest || eb.Error.Code != "invalid_request" {
		t.Fatalf("stalled upload: status %d, body %s; want 400 invalid_request", res.StatusCode, b)
	}
}

// TestTruncatedBodyIsTheClients: a body that ends before its
// Content-Length (the client closed its side) is the client's 400, for
// CSV as for JSON, never the 503 of a database connection lost mid-reply
// (which fails with the same io.ErrUnexpectedEOF).
func TestTruncatedBodyIsTheClients(t *testing.T) {
	e := newEnv(t)
	e.runImports()
	addr := e.listen()
	token := e.userToken(e.admin, acmeHost)
	for _, tc := range []struct{ contentType, body string }{
		{"text/csv", "external_id,email\nT-1,t1@example.com\nT-2,t2@exa"},
		{"application/json", `[{"external_id": "T-1", "email": "t1@exa`},
	} {
		t.Run(tc.contentType, func(t *testing.T) {
			conn := dial(t, addr)
			fmt.Fprintf(conn, "POST /api/customers/upload/ HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Type: %s\r\nContent-Length: 5000\r\n\r\n%s",
				acmeHost, token, tc.contentType, tc.body)
			if err := conn.(*net.TCPConn).CloseWrite(); err != nil {
				t.Fatal(err)
			}
			res, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			var body struct {
				Error struct{ Code, Message string } `json:"error"`
			}
			if err := json.NewDecoder(res.Body).Decode(&body); err != nil {
				t.Fatal(err)
			}
			if res.StatusCode != http.StatusBadRequest || body.Error.Code != "invalid_request" {
				t.Errorf("%d %+v, want 400 invalid_request", res.StatusCode, body.Error)
			}
		})
	}
}
