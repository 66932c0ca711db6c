package projections_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/clientele/clientele/eventstore/postgres"
	"github.com/clientele/clientele/internal/bus"
	"github.com/clientele/clientele/internal/pg"
	"github.com/clientele/clientele/internal/pg/pgtest"
	"github.com/clientele/clientele/projections"
	"github.com/clientele/clientele/projections/internal/projectiontest"
)

// The helper process reads these.
const (
	helperURL  = "CLIENTELE_PROJECTIONS_HELPER_URL"
	helperKill = "CLIENTELE_PROJECTIONS_HELPER_KILL_AFTER"
)

// TestKillBetweenCommitAndAck kills a projector process right after it
// committed a commit's read-model transaction and before it acked the
// message. The commit comes again to the next process, which must skip it:
// every event counted exactly once.
func TestKillBetweenCommitAndAck(t *testing.T) {
	ctx := context.Background()
	url := pgtest.URL(t)
	pool, err := pg.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	createCounterTable(t, pool, "counts")
	store := postgres.New(pool, projections.CommitPublisher{})
	for i := range 12 {
		projectiontest.MustAppend(t, store, projectiontest.Ticks("acme", strconv.Itoa(i%3), 1+i%4))
	}

	const killAfter = 5
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestHelperProjectorProcess$", "-test.v")
	cmd.Env = append(os.Environ(), helperURL+"="+url, helperKill+"="+strconv.Itoa(killAfter))
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || !exit.Sys().(syscall.WaitStatus).Signaled() || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("helper process: %v, want killed by SIGKILL; output:\n%s", err, out.Bytes())
	}

	// The process died with commits applied whose messages are not acked.
	var applied, unacked int64
	err = pool.QueryRow(ctx, `
		SELECT cp.events_applied, (SELECT count(*) FROM watermill_commits m
			WHERE (m.transaction_id, m."offset") > (o.last_processed_transaction_id, o.offset_acked)
			  AND m.transaction_id <= cp.transaction_id)
		FROM projection_checkpoints cp, watermill_offsets_commits o
		WHERE cp.name = 'counts' AND o.consumer_group = 'counts'`).Scan(&applied, &unacked)
	if err != nil {
		t.Fatal(err)
	}
	if applied == 0 || unacked == 0 {
		t.Fatalf("after the kill: %d events applied, %d applied commits unacked; want both > 0", applied, unacked)
	}
	t.Logf("killed after applying %d events; %d applied commits will come again", applied, unacked)

	p := counter{"counts", "counts"}
	reg := prometheus.NewRegistry()
	rt, err := projections.NewRuntime(projections.RuntimeConfig{
		Pool: pool, Store: store, Async: []projections.Projector{p}, Registerer: reg, ConsumerSettings: bus.ConsumerSettings{PollInterval: 10 * time.Millisecond},
	})
	if err != nil {
		t.Fatal(err)
	}
	projectiontest.StartRuntime(t, rt)
	projectiontest.WaitCaughtUp(t, pool, p)
	checkCounts(t, pool, "counts")
	if got := metricValue(t, reg, "clientele_projection_commits_skipped_total", "counts"); got != float64(unacked) {
		t.Errorf("skipped %v redelivered commits, want %d", got, unacked)
	}
}

// TestHelperProjectorProcess is the process TestKillBetweenCommitAndAck
// kills; it does nothing when run on its own.
func TestHelperProjectorProcess(t *testing.T) {
	url := os.Getenv(helperURL)
	if url == "" {
		t.Skip("run by TestKillBetweenCommitAndAck")
	}
	killAfter, err := strconv.Atoi(os.Getenv(helperKill))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pool, err := pg.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	var commits atomic.Int64
	rt, err := projections.NewRuntime(projections.RuntimeConfig{
		Pool: pool, Store: postgres.New(pool), Async: []projections.Projector{counter{"counts", "counts"}},
		ConsumerSettings: bus.ConsumerSettings{PollInterval: 10 * time.Millisecond},
		AfterApply: func(name string) {
			if commits.Add(1) == int64(killAfter) {
				fmt.Println("killing myself after commit", killAfter)
				_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
				select {} // never ack
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	err = rt.Run(ctx)
	t.Fatalf("still alive after %d commits: Run = %v", commits.Load(), err)
}
