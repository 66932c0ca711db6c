// Command clientele-load is the load driver of `make bench`: it runs a real
// `clientele serve` as a child process on a durable embedded PostgreSQL,
// uploads generated records through the HTTP API, waits until every record
// is retrievable, and reports the upload acceptance rate, the end-to-end
// rate, the server's peak RSS and, in the same run on the same server, the
// rate of a plain COPY of the same records into one jsonb table.
//
//	go run ./cmd/clientele-load -entity customers -n 1000000
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"
)

type options struct {
	entity    string
	n         int
	perUpload int
	binary    string
	dir       string
	keep      bool
}

func main() {
	var o options
	flag.StringVar(&o.entity, "entity", "customers", "entity to import (customers, events, sales)")
	flag.IntVar(&o.n, "n", 1_000_000, "records to import")
	flag.IntVar(&o.perUpload, "per-upload", 100_000, "records per upload request")
	flag.StringVar(&o.binary, "binary", "bin/clientele", "the clientele binary to run")
	flag.StringVar(&o.dir, "dir", filepath.Join(os.TempDir(), fmt.Sprintf("clientele-load-%d", os.Getuid())), "data directory of the embedded PostgreSQL (kept between runs; each run uses a fresh database)")
	flag.BoolVar(&o.keep, "keep", false, "keep the run's database")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	res, err := run(ctx, o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "clientele-load:", err)
		os.Exit(1)
	}
	res.print(os.Stdout)
}

// result holds the figures of one run.
type result struct {
	entity         string
	n              int
	bytes          int64
	uploadTime     time.Duration
	endToEnd       time.Duration
	copyTime       time.Duration
	peakRSSKiB     int64
	accepted       int
	rejected       int
	copyRowsPerSec float64
	e2eRowsPerSec  float64
	uploadPerSec   float64
	ratioToCopy    float64
	uploadMBPerSec float64
}

func (r result) print(w *os.File) {
	fmt.Fprintf(w, "entity:              %s\n", r.entity)
	fmt.Fprintf(w, "records:             %d (%.0f MB of JSON, %d accepted, %d rejected)\n", r.n, float64(r.bytes)/1e6, r.accepted, r.rejected)
	fmt.Fprintf(w, "upload acceptance:   %.0f records/s (%.1f MB/s, %.1fs)\n", r.uploadPerSec, r.uploadMBPerSec, r.uploadTime.Seconds())
	fmt.Fprintf(w, "end to end:          %.0f records/s (%.1fs until all retrievable)\n", r.e2eRowsPerSec, r.endToEnd.Seconds())
	fmt.Fprintf(w, "COPY into jsonb:     %.0f records/s (%.1fs)\n", r.copyRowsPerSec, r.copyTime.Seconds())
	fmt.Fprintf(w, "end to end / COPY:   %.3f\n", r.ratioToCopy)
	fmt.Fprintf(w, "server peak RSS:     %.0f MB\n", float64(r.peakRSSKiB)/1024)
}
