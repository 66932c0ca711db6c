package systemtest_test

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"net/http"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/clientele/clientele/eventstore"
)

var measureChanges = flag.Int("measure-changes", 0,
	"measure GET /api/changes/ as NDJSON over this many customer changes (docs/benchmarks.md)")

// TestChangesThroughput measures the NDJSON feed over HTTP on the real
// stack: changes a second, and the process's heap while it streams. The
// changes are customer upserts (sealed, so each is opened), 1,000 a
// commit. It runs only with -measure-changes N.
func TestChangesThroughput(t *testing.T) {
	n := *measureChanges
	if n == 0 {
		t.Skip("a measurement: run with -measure-changes N")
	}
	e := newSerialEnv(t)
	admin := e.userToken(e.admin, acmeHost)
	loadStart := time.Now()
	for c := 0; c < n; c += 1000 {
		recs := make([]customerRecord, 0, 1000)
		for i := c; i < c+1000 && i < n; i++ {
			recs = append(recs, customerRecord{id: fmt.Sprintf("%032x", i+1), set: permissions(map[string]any{
				"email": fmt.Sprintf("c%d@example.com", i), "last_name": "Name", "tags": []string{"vip"}})})
		}
		e.appendCustomers(e.acme, recs...)
	}
	t.Logf("appended %d changes in %v", n, time.Since(loadStart).Round(time.Millisecond))
	// The log's head passes a commit once no transaction that began
	// before it is open (a projector's, say): wait until it has them all,
	// or the feed, which reads up to the head, ends short.
	e.waitHeadAtLast()

	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	var peakHeap atomic.Uint64
	done := make(chan struct{})
	go func() {
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		var m runtime.MemStats
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				runtime.ReadMemStats(&m)
				if m.HeapInuse > peakHeap.Load() {
					peakHeap.Store(m.HeapInuse)
				}
			}
		}
	}()
	req, err := http.NewRequest(http.MethodGet, e.srv.URL+"/api/changes/", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = acmeHost
	req.Header.Set("Authorization", "Bearer "+admin)
	req.Header.Set("Accept", "application/x-ndjson")
	start := time.Now()
	res, err := e.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(nil, 1<<20)
	lines, bytes := 0, 0
	for sc.Scan() {
		lines++
		bytes += len(sc.Bytes()) + 1
	}
	res.Body.Close()
	took := time.Since(start)
	close(done)
	if err := sc.Err(); err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("status %d, %v", res.StatusCode, err)
	}
	if lines < n {
		t.Fatalf("%d lines, want at least %d", lines, n)
	}
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	t.Logf("streamed %d changes (%d MB) in %v: %.0f changes/s; heap in use %d MB before, peak %d MB while streaming; Sys %d MB before, %d MB after",
		lines, bytes>>20, took.Round(time.Millisecond), float64(lines)/took.Seconds(),
		before.HeapInuse>>20, peakHeap.Load()>>20, before.Sys>>20, after.Sys>>20)
}

// waitHeadAtLast waits until the log's head (what a read of the log
// reaches) is the last event committed.
func (e *env) waitHeadAtLast() {
	e.t.Helper()
	var last eventstore.Position
	if err := e.pool.QueryRow(context.Background(), `SELECT transaction_id::text::bigint, global_position FROM events
		ORDER BY transaction_id DESC, global_position DESC LIMIT 1`).Scan(&last.TxID, &last.Global); err != nil {
		e.t.Fatal(err)
	}
	e.waitFor(30*time.Second, "the log's head at its last event", func() bool {
		head, err := e.store.Head(context.Background())
		if err != nil {
			e.t.Fatal(err)
		}
		return !head.Less(last)
	})
}
