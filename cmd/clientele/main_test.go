package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/clientele/clientele/internal/pg/pgtest"
	"github.com/clientele/clientele/internal/testlog"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

func env(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

// mustRun runs a subcommand to completion and returns its output.
func mustRun(t *testing.T, getenv func(string) string, args ...string) string {
	t.Helper()
	var out, errOut bytes.Buffer
	if err := run(context.Background(), args, &out, &errOut, getenv); err != nil {
		t.Fatalf("clientele %s: %v\n%s", strings.Join(args, " "), err, errOut.String())
	}
	return out.String()
}

// startServe runs `serve` in the background and returns its base URL and
// a stop function that shuts it down gracefully and checks it exited
// cleanly.
func startServe(t *testing.T, getenv func(string) string, args ...string) (string, *testlog.Buffer, func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	out, errOut := &testlog.Buffer{}, &testlog.Buffer{}
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, append([]string{"serve", "--addr", "127.0.0.1:0"}, args...), out, errOut, getenv)
	}()
	re := regexp.MustCompile(`listening on (http://\S+)`)
	deadline := time.Now().Add(90 * time.Second)
	for {
		if m := re.FindStringSubmatch(out.String()); m != nil {
			stopped := false
			return m[1], out, func() {
				if stopped {
					return
				}
				stopped = true
				cancel()
				select {
				case err := <-done:
					if err != nil {
						t.Errorf("serve: %v\n%s", err, errOut.String())
					}
				case <-time.After(60 * time.Second):
					t.Errorf("serve did not stop within 60s")
				}
			}
		}
		select {
		case err := <-done:
			cancel()
			t.Fatalf("serve exited: %v\n%s\n%s", err, out.String(), errOut.String())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			cancel()
			t.Fatalf("serve did not start\n%s", errOut.String())
		}
	}
}

func request(t *testing.T, method, url, host string, body io.Reader, prepare func(*http.Request)) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(method, url, body)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = host
	if prepare != nil {
		prepare(req)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var v map[string]any
	_ = json.Unmarshal(b, &v)
	return resp.StatusCode, v
}

// TestServeEndToEnd drives the real binary's entry point: admin
// subcommands, then serve, then a user's first steps over HTTP, then a
// graceful shutdown.
func TestServeEndToEnd(t *testing.T) {
	getenv := env(map[string]string{"DATABASE_URL": pgtest.URL(t), "CLIENTELE_LOG_LEVEL": "warn"})
	out := mustRun(t, getenv, "company", "create", "acme", "--name", "ACME Oy", "--timezone", "Europe/Helsinki", "--currency", "EUR", "--short-name", "ACME", "--domain", "crm.acme.test")
	if !strings.Contains(out, "company acme") || !strings.Contains(out, "Europe/Helsinki") {
		t.Fatalf("company create printed %q", out)
	}
	mustRun(t, getenv, "user", "create", "--company", "acme", "--email", "ops@acme.test", "--password", "correct horse battery", "--role", "admin")
	out = mustRun(t, getenv, "user", "create", "--company", "acme", "--email", "two@acme.test", "--password", "correct horse battery", "--totp")
	if !strings.Contains(out, "otpauth://totp/") {
		t.Fatalf("user create --totp printed %q", out)
	}

	// Port 0: serve prints the profiler's address.
	base, printed, stop := startServe(t, getenv, "--base-domain", "localhost", "--debug-addr", "127.0.0.1:0")
	defer stop()
	m := regexp.MustCompile(`Go's profiler on http://(\S+)/debug/pprof/`).FindStringSubmatch(printed.String())
	if m == nil {
		t.Fatalf("serve did not print the profiler's address:\n%s", printed.String())
	}
	dbg := m[1]

	if code, _ := request(t, "GET", base+"/healthz", "acme.localhost", nil, nil); code != 200 {
		t.Fatalf("healthz: %d", code)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		code, body := request(t, "GET", base+"/readyz", "acme.localhost", nil, nil)
		if code == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("readyz: %d %v", code, body)
		}
		time.Sleep(100 * time.Millisecond)
	}

	code, body := request(t, "POST", base+"/api/access-tokens/", "acme.localhost", nil, func(r *http.Request) {
		r.SetBasicAuth("ops@acme.test", "correct horse battery")
	})
	if code != 200 {
		t.Fatalf("create token: %d %v", code, body)
	}
	token, _ := body["access_token"].(map[string]any)["token"].(string)
	if token == "" {
		t.Fatalf("no token in %v", body)
	}
	for _, host := range []string{"acme.localhost", "crm.acme.test"} {
		code, body = request(t, "POST", base+"/api/integrations/", host, strings.NewReader(`{"integration_name":"erp","parameters":{"name":"ERP","description":"nightly"}}`), func(r *http.Request) {
			r.Header.Set("Authorization", "Bearer "+token)
			r.Header.Set("Content-Type", "application/json")
		})
		if code != 200 {
			t.Fatalf("create integration on %s: %d %v", host, code, body)
		}
	}
	if code, body = request(t, "GET", base+"/api/integrations/", "nowhere.localhost", nil, func(r *http.Request) {
		r.Header.Set("Authorization", "Bearer "+token)
	}); code != 404 {
		t.Fatalf("unknown host: %d %v", code, body)
	}
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{"http_requests_total", "clientele_eventstore_commits_total", "go_goroutines"} {
		if !strings.Contains(string(metrics), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	// The profiler answers on --debug-addr only, never on the API's address.
	if code, _ := request(t, "GET", "http://"+dbg+"/debug/pprof/cmdline", "", nil, nil); code != 200 {
		t.Errorf("profiler on --debug-addr: %d", code)
	}
	if code, _ := request(t, "GET", base+"/debug/pprof/cmdline", "acme.localhost", nil, nil); code == 200 {
		t.Error("the profiler is served on the API's address")
	}
	stop()
}

// TestEmbeddedSharedDataDir runs serve on the embedded PostgreSQL and an
// admin command on the same data directory while serve runs; the server
// stops when the last of them leaves.
func TestEmbeddedSharedDataDir(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a PostgreSQL cluster")
	}
	dir, err := os.MkdirTemp("", "clientele-cmd-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil { // the server runs as another user when we are root
		t.Fatal(err)
	}
	getenv := env(map[string]string{"CLIENTELE_LOG_LEVEL": "warn"})
	data := filepath.Join(dir, "data")

	base, out, stop := startServe(t, getenv, "--data-dir", data, "--demo")
	defer stop()
	login := regexp.MustCompile(`Log in as (\S+) with password (\S+)`).FindStringSubmatch(out.String())
	if login == nil {
		t.Fatalf("serve --demo printed no login:\n%s", out.String())
	}
	// The printed console address answers (its log-in page, after a redirect).
	consolePath := regexp.MustCompile(`Console: http://demo\.localhost:\d+(/console/)\n`).FindStringSubmatch(out.String())
	if consolePath == nil {
		t.Fatalf("serve --demo printed no console address:\n%s", out.String())
	}
	if code, _ := request(t, "GET", base+consolePath[1], "demo.localhost", nil, nil); code != 200 {
		t.Fatalf("console: %d", code)
	}
	mustRun(t, getenv, "company", "create", "other", "--data-dir", data)

	code, body := request(t, "POST", base+"/api/access-tokens/", "demo.localhost", nil, func(r *http.Request) {
		r.SetBasicAuth(login[1], login[2])
	})
	if code != 200 {
		t.Fatalf("demo login: %d %v", code, body)
	}
	code, _ = request(t, "GET", base+"/healthz", "other.localhost", nil, nil)
	if code != 200 {
		t.Fatalf("healthz: %d", code)
	}
	stop()
	if _, err := os.Stat(filepath.Join(data, "pg", "postmaster.pid")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("embedded server still running after the last process left (postmaster.pid: %v)", err)
	}
}
