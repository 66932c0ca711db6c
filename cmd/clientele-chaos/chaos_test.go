package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// TestChaosRun is make test's run of the harness: the service built from
// this tree, on three nodes, three NATS servers and a PostgreSQL primary
// with its standby, under faults of every kind for CHAOS_TEST_DURATION
// (90 s by default), a seed from the clock (or CHAOS_SEED); every check
// must pass. A failing run keeps its folder, named in the log with the
// seed that repeats its schedule (make chaos CHAOS_SEED=...).
func TestChaosRun(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the whole service under faults for 90 s")
	}
	bin := filepath.Join(t.TempDir(), "clientele")
	build := exec.Command("go", "build", "-o", bin, "../clientele")
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		t.Fatalf("go build: %v", err)
	}
	root := filepath.Join(os.TempDir(), "clientele-chaos-test")
	if err := os.MkdirAll(root, 0o755); err != nil {
		t.Fatal(err)
	}
	o := options{duration: envDuration("CHAOS_TEST_DURATION", 90*time.Second), seed: envSeed("CHAOS_SEED"), bin: bin, root: root}
	code, err := runChaos(o)
	if err != nil {
		t.Fatalf("seed %d: %v", o.seed, err)
	}
	if code != 0 {
		t.Fatalf("seed %d: a check failed (its lines and run folder above; make chaos CHAOS_SEED=%d CHAOS_DURATION=%v repeats the schedule)", o.seed, o.seed, o.duration)
	}
}
