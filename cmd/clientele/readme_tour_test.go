package main

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/clientele/clientele/internal/testlog"
)

// readmeBlock returns the shell block of README.md that follows marker.
func readmeBlock(t *testing.T, marker string) string {
	t.Helper()
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	i := strings.Index(s, marker)
	if i < 0 {
		t.Fatalf("README.md has no %q", marker)
	}
	m := regexp.MustCompile("(?s)```sh\n(.*?)```").FindStringSubmatch(s[i:])
	if m == nil {
		t.Fatalf("README.md has no sh block after %q", marker)
	}
	return m[1]
}

// TestREADMETour runs the README's five-minute tour as written, against
// `serve --demo` started as `make run ARGS='--webhook-allow-cidrs
// 127.0.0.0/8'` starts it (on an embedded PostgreSQL in .clientele) and the
// receiver the README starts, on ports of their own: the tour's 8080 and
// 9000 are the only words changed. It checks that the receiver got every
// customer, signed.
func TestREADMETour(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a PostgreSQL cluster")
	}
	if _, err := exec.LookPath("curl"); err != nil {
		t.Fatal("the tour needs curl (Debian: apt-get install curl)")
	}
	dir, err := os.MkdirTemp("", "clientele-tour-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil { // the server runs as another user when we are root
		t.Fatal(err)
	}

	// The receiver, as the README starts it.
	receiver := readmeBlock(t, "a receiver that prints")
	secret := regexp.MustCompile(`--secret (whsec_\S+)`).FindStringSubmatch(receiver)
	if !strings.Contains(receiver, "bin/clientele receive --addr 127.0.0.1:9000") || secret == nil {
		t.Fatalf("the README's receiver is not the one this test runs: %s", receiver)
	}
	wh, err := standardwebhooks.NewWebhook(secret[1])
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	received := &testlog.Buffer{}
	stopped := make(chan error, 1)
	go func() { stopped <- serveReceiver(ctx, ln, wh, received) }()
	t.Cleanup(func() {
		cancel()
		if err := <-stopped; err != nil {
			t.Errorf("receiver: %v", err)
		}
	})

	getenv := env(map[string]string{"CLIENTELE_LOG_LEVEL": "warn"})
	base, out, stop := startServe(t, getenv, "--data-dir", filepath.Join(dir, ".clientele"), "--demo",
		"--sftp-addr", "127.0.0.1:0", "--webhook-allow-cidrs", "127.0.0.0/8")
	defer stop()
	if !strings.Contains(out.String(), "Webhook outlets may reach public addresses and 127.0.0.0/8") {
		t.Errorf("the banner does not say what webhooks may reach:\n%s", out.String())
	}
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(base, "http://"))
	_, rport, _ := net.SplitHostPort(ln.Addr().String())

	tour := readmeBlock(t, "TestREADMETour (cmd/clientele) runs the next block")
	if !strings.Contains(tour, "demo.localhost:8080") || !strings.Contains(tour, "127.0.0.1:9000") {
		t.Fatalf("the tour no longer names the ports this test replaces:\n%s", tour)
	}
	script := strings.NewReplacer("demo.localhost:8080", "demo.localhost:"+port, "127.0.0.1:9000", "127.0.0.1:"+rport).Replace(tour)
	runCtx, runCancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer runCancel()
	cmd := exec.CommandContext(runCtx, "bash", "-euo", "pipefail", "-c", script)
	cmd.Dir = dir
	output, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the tour failed: %v\n%s", err, output)
	}
	for _, want := range []string{`"state":"completed"`, `"email":"liisa@example.org"`, `"matched":1`, `"status":"OK"`} {
		if !strings.Contains(string(output), want) {
			t.Errorf("the tour's output lacks %s:\n%s", want, output)
		}
	}
	got := received.String()
	for _, want := range []string{"liisa@example.org", "matti@example.org", "aino@example.org", `"city":"Helsinki"`} {
		if !strings.Contains(got, want) {
			t.Errorf("the receiver did not get %s:\n%s", want, got)
		}
	}
	if strings.Contains(got, "INVALID") || !strings.Contains(got, "signature valid") {
		t.Errorf("the receiver's signatures:\n%s", got)
	}
}
