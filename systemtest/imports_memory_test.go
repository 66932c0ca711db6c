package systemtest_test

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/clientele/clientele/commands/imports/testimporter"
	"github.com/clientele/clientele/eventstore/postgres"
	"github.com/clientele/clientele/internal/ingest/ingesttest"
)

// TestUploadMemoryBounded streams a generated upload of 200 MB (40 MB
// under the race detector, which is ten times slower) through the HTTP
// API, client and server in this process, and checks that the heap stays
// a small fraction of it: the body is staged chunk by chunk, never held.
func TestUploadMemoryBounded(t *testing.T) {
	size := 200 << 20
	if raceEnabled {
		size = 40 << 20
	}
	const recordSize = 300
	e := newSerialEnv(t, withImporters(&testimporter.Importer{Store: postgres.New(nil)})) // staging only: no worker
	token := e.userToken(e.admin, acmeHost)

	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	peak := make(chan uint64)
	stop := make(chan struct{})
	go func() {
		var most uint64
		for {
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			most = max(most, m.HeapInuse)
			select {
			case <-stop:
				peak <- most
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
	}()
	start := time.Now()
	n := size / recordSize
	run := e.mustUpload(token, "/api/customers/upload/", streamBody(ingesttest.Upload(n, recordSize)))
	close(stop)
	most := <-peak
	elapsed := time.Since(start)

	var received int
	if err := e.pool.QueryRow(context.Background(), `SELECT received FROM import_runs WHERE id = $1`, run).Scan(&received); err != nil {
		t.Fatal(err)
	}
	if received != n {
		t.Fatalf("staged %d records, want %d", received, n)
	}
	t.Logf("staged %d MB (%d records) in %v (%.0f MB/s); heap in use %d MB before, at most %d MB during",
		size>>20, n, elapsed.Round(time.Millisecond), float64(size)/(1<<20)/elapsed.Seconds(), before.HeapInuse>>20, most>>20)
	if limit := uint64(64 << 20); most > limit {
		t.Errorf("heap in use reached %d MB staging a %d MB upload; want under %d MB", most>>20, size>>20, limit>>20)
	}
}
