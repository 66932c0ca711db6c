package systemtest_test

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/clientele/clientele/delivery"
)

// closedLoopbackAddr is a loopback address nothing listens on.
func closedLoopbackAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// deliverOneAttemptEach runs a deliverer as serve does (loopback allowed, as
// --webhook-allow-cidrs 127.0.0.0/8 would) until the test ends, logging
// into the service's log. A failed batch waits an hour: one attempt each.
func (e *env) deliverOneAttemptEach() {
	e.t.Helper()
	dl, err := delivery.New(delivery.Config{
		Pool: e.pool, Keys: e.keys, Disable: e.cmds.DisableOutlet.BySystem, AllowCIDRs: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")},
		PollInterval: 10 * time.Millisecond, LeaseTTL: time.Second, MinBackoff: time.Hour, MaxBackoff: time.Hour,
		Logger: slog.New(slog.NewJSONHandler(e.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	})
	if err != nil {
		e.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = dl.Run(ctx) }()
	e.t.Cleanup(func() { cancel(); <-done })
}

// attemptAnswer is an attempt as GET .../log/<n>/ answers it.
type attemptAnswer struct {
	Status      string `json:"status"`
	FailReason  string `json:"fail_reason"`
	HTTPRequest string `json:"http_request"`
}

// waitFirstAttempt reads the outlet's first attempt, once it is logged.
func (e *env) waitFirstAttempt(token, outletPath string) (attemptAnswer, response) {
	e.t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; {
		res := e.do(http.MethodGet, outletPath+"log/1/", bearer(token))
		if res.status == http.StatusOK {
			var a struct {
				Entry attemptAnswer `json:"entry"`
			}
			res.decode(e.t, &a)
			return a.Entry, res
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("no log entry: %s", res.body)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestFailReasonCredentialsMasked: an outlet whose URL carries a
// credential in its query (?api_key=...) fails to connect; the failure
// reason names the URL with its query values masked to a staff user and
// to a role-less integration token, in the log and in the entry, while
// the admin reads the credential in the outlet and in the raw request. A
// reason stored with the URL in clear (as it was before the worker
// masked it) is masked when read by anyone but an admin. The service's
// log shows no credential. A URL with a literal space is refused.
func TestFailReasonCredentialsMasked(t *testing.T) {
	e := newEnv(t)
	admin := e.userToken(e.admin, acmeHost)
	staff := e.userToken(e.staff, acmeHost)
	bare := e.createToken(admin, map[string]any{"owner_id": "integrations/" + e.createIntegration(admin, "shop")}).AccessToken.Token
	id := e.createDatatarget(admin, "orders")
	path := "/api/datatargets/" + id + "/outlets/"
	addr := closedLoopbackAddr(t)
	hookURL := "http://" + addr + "/hook?api_key=secret&region=eu-w3st"

	res := e.do(http.MethodPost, path, bearer(admin), jsonBody(map[string]any{
		"outlet_type": "webhook", "request": map[string]any{"url": "http://" + addr + "/hook?api_key=a b"},
	}))
	if b := res.wantError(t, http.StatusUnprocessableEntity, "validation_error"); len(b.Error.Details) != 1 ||
		b.Error.Details[0].Field != "request.url" || !strings.Contains(b.Error.Details[0].Reason, "valid URL") {
		t.Errorf("a URL with a space: %s", res.body)
	}

	res = e.do(http.MethodPost, path, bearer(admin), jsonBody(map[string]any{
		"outlet_type": "webhook", "request": map[string]any{"url": hookURL},
	}))
	res.wantStatus(t, http.StatusOK)
	var o outletAnswer
	res.decode(t, &o)
	outletPath := path + o.Outlet.ID + "/"
	e.deliverOneAttemptEach()
	e.do(http.MethodPost, "/api/datatargets/"+id+"/post/", bearer(admin), jsonBody(map[string]any{"messages": []any{map[string]int{"n": 1}}})).
		wantStatus(t, http.StatusOK)

	entry, _ := e.waitFirstAttempt(admin, outletPath)
	if entry.Status != "FAIL" || !strings.Contains(entry.FailReason, "connection refused") ||
		!strings.Contains(entry.FailReason, `"http://`+addr+`/hook?api_key=****&region=****"`) {
		t.Errorf("the admin's fail_reason %q", entry.FailReason)
	}
	if !strings.HasPrefix(entry.HTTPRequest, "POST /hook?api_key=secret&region=eu-w3st HTTP/1.1\r\n") {
		t.Errorf("the admin's raw request %q", entry.HTTPRequest)
	}
	res = e.do(http.MethodGet, outletPath, bearer(admin))
	if !strings.Contains(string(res.body), "api_key=secret") {
		t.Errorf("the admin's outlet: %s", res.body)
	}

	// What each reader is shown, in the log and in the entry.
	shown := func(who, token string) {
		t.Helper()
		for _, p := range []string{outletPath + "log/", outletPath + "log/1/"} {
			res := e.do(http.MethodGet, p, bearer(token))
			res.wantStatus(t, http.StatusOK)
			for _, secret := range []string{"secret", "eu-w3st"} {
				if strings.Contains(string(res.body), secret) {
					t.Errorf("%s reads %q in %s: %s", who, secret, p, res.body)
				}
			}
			if !strings.Contains(string(res.body), `api_key=****\u0026region=****`) && !strings.Contains(string(res.body), `api_key=****&region=****`) {
				t.Errorf("%s reads no masked URL in %s: %s", who, p, res.body)
			}
		}
	}
	shown("staff", staff)
	shown("a role-less integration token", bare)

	// A reason stored with the URL in clear, as the worker wrote it before.
	clear := `no reply: Post "` + hookURL + `": dial tcp ` + addr + `: connect: connection refused`
	if _, err := e.pool.Exec(context.Background(), `UPDATE outlet_log SET fail_reason = $1 WHERE outlet_id = $2`, clear, o.Outlet.ID); err != nil {
		t.Fatal(err)
	}
	if entry, _ := e.waitFirstAttempt(admin, outletPath); entry.FailReason != clear {
		t.Errorf("the admin reads the stored reason as %q", entry.FailReason)
	}
	shown("staff (a reason stored in clear)", staff)
	shown("a role-less integration token (a reason stored in clear)", bare)

	if logs := e.logs.String(); strings.Contains(logs, "api_key=secret") || strings.Contains(logs, "eu-w3st") {
		t.Errorf("the service's log shows the credential:\n%s", logs)
	}
}

// TestGuardRefusesEmbeddedIPv4: an outlet to a loopback address written
// as an IPv6 address that embeds it ([::127.0.0.1], the deprecated
// IPv4-compatible form, and the IPv4-translated, 6to4 and NAT64 forms) is
// refused by the SSRF guard although loopback is allowed, like any other
// special range, and no request is made.
func TestGuardRefusesEmbeddedIPv4(t *testing.T) {
	e := newEnv(t)
	admin := e.userToken(e.admin, acmeHost)
	port := closedLoopbackAddr(t)[len("127.0.0.1:"):]
	e.deliverOneAttemptEach()
	for host, why := range map[string]string{
		"[::127.0.0.1]":       "refused to connect to ::7f00:1 (IPv4-compatible address)",
		"[::ffff:0:7f00:1]":   "refused to connect to ::ffff:0:7f00:1 (IPv4-translated address)",
		"[2002:7f00:1::1]":    "refused to connect to 2002:7f00:1::1 (6to4 address)",
		"[64:ff9b::7f00:1]":   "refused to connect to 64:ff9b::7f00:1 (NAT64 address)",
		"[::ffff:127.0.0.1]":  "connection refused", // the IPv4 address itself, allowed
		"[::ffff:7f00:1]":     "connection refused",
		"[0:0:0:0:0:0:0:1]":   "refused to connect to ::1 (loopback address)",
		"[::0.0.0.0]":         "refused to connect to :: (unspecified address)",
		"[::169.254.169.254]": "refused to connect to ::a9fe:a9fe (IPv4-compatible address)",
	} {
		t.Run(host, func(t *testing.T) {
			id := e.createDatatarget(admin, "orders")
			path := "/api/datatargets/" + id + "/outlets/"
			res := e.do(http.MethodPost, path, bearer(admin), jsonBody(map[string]any{
				"outlet_type": "webhook", "request": map[string]any{"url": "http://" + host + ":" + port + "/hook"},
			}))
			res.wantStatus(t, http.StatusOK)
			var o outletAnswer
			res.decode(t, &o)
			e.do(http.MethodPost, "/api/datatargets/"+id+"/post/", bearer(admin), jsonBody(map[string]any{"messages": []any{map[string]int{"n": 1}}})).
				wantStatus(t, http.StatusOK)
			entry, _ := e.waitFirstAttempt(admin, path+o.Outlet.ID+"/")
			if entry.Status != "FAIL" || !strings.Contains(entry.FailReason, why) {
				t.Errorf("fail_reason %q, want %q", entry.FailReason, why)
			}
		})
	}
}
