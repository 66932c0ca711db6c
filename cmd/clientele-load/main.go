// Command clientele-load is the load driver of `make bench`: it runs a real
// `clientele serve` as a child process on a durable embedded PostgreSQL,
// uploads generated records through the HTTP API, waits until every record
// is retrievable, and reports the upload acceptance rate, the end-to-end
// rate, the server's peak RSS and, in the same run on the same database
// once the server has stopped, the rates of a plain COPY of the same
// records into one jsonb table, of a conventional store of them by
// batched upserts into one indexed table (upsert.go), and of the floor:
// the rows the import left, COPYed again into copies of their tables
// (floor.go), the least time storing them takes. A customers run also
// measures the reads (reads.go): paging through every customer against a
// COPY out of the same documents, and a rebuild of the read model.
//
//	go run ./cmd/clientele-load -entity customers -n 1000000
//
// With -sftp it runs the SFTP benchmark instead (sftp.go): one CSV file
// of customers through the SFTP drop directory, then the same file over
// HTTP, in the same run.
//
//	go run ./cmd/clientele-load -sftp -csv-bytes 1000000000
//
// With -bus nats it runs the load end to end on the PostgreSQL transport,
// then on NATS JetStream, in the same run (nats.go).
//
//	go run ./cmd/clientele-load -bus nats -entity customers -n 1000000
//	go run ./cmd/clientele-load -entity campaigns -n 5000000 -customers 1000000 -sale-rows 1000000
//
// With -entity segments it runs the segments benchmark (segments_scale.go):
// -n customers and five events each, imported without segments and then
// with 20, the membership's lag, previews and one more segment's backfill.
//
//	go run ./cmd/clientele-load -entity segments -n 1000000
//
// With -flood it runs the flood benchmark instead (flood.go): one
// company's oversized refused requests against another's small ones.
//
//	go run ./cmd/clientele-load -flood -flood-senders 8 -flood-bytes 10000000 -flood-for 30s
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
	// The campaigns run's sizes (campaigns.go); n is its campaign events.
	customers, campaigns, saleRows int
	// sftp runs the SFTP benchmark (sftp.go): a CSV file of csvBytes (at
	// csv, or generated in dir) through SFTP, then over HTTP.
	sftp     bool
	csvBytes int64
	csv      string
	// transferOnly stops the SFTP benchmark once the file is staged.
	transferOnly bool
	// httpFirst sends the file over HTTP first, then by SFTP.
	httpFirst bool
	// bus "nats" runs the bus benchmark (nats.go), busRounds times.
	bus       string
	busRounds int
	// console times the console's pages (console.go).
	console bool
	// flood runs the flood benchmark (flood.go): floodSenders oversized
	// refused requests of floodBytes at once for floodFor.
	flood        bool
	floodSenders int
	floodBytes   int
	floodFor     time.Duration
	// endToEndOnly stops a run once its records are retrievable: no
	// reads, no baselines; the segment_members projector's lag and facts
	// instead (segments.go).
	endToEndOnly bool
}

func main() {
	var o options
	flag.StringVar(&o.entity, "entity", "customers", "entity to import (customers, events, sales), or campaigns (statistics), or segments (imports with and without 20 segments, membership lag, previews, a backfill: segments_scale.go)")
	flag.IntVar(&o.n, "n", 1_000_000, "records to import")
	flag.IntVar(&o.perUpload, "per-upload", 100_000, "records per upload request")
	flag.StringVar(&o.binary, "binary", "bin/clientele", "the clientele binary to run")
	flag.StringVar(&o.dir, "dir", filepath.Join(os.TempDir(), fmt.Sprintf("clientele-load-%d", os.Getuid())), "data directory of the embedded PostgreSQL (kept between runs; each run uses a fresh database)")
	flag.BoolVar(&o.keep, "keep", false, "keep the run's database")
	flag.IntVar(&o.customers, "customers", 1_000_000, "campaigns run: customers imported first")
	flag.IntVar(&o.campaigns, "campaigns", 100, "campaigns run: campaigns")
	flag.IntVar(&o.saleRows, "sale-rows", 1_000_000, "campaigns run: sale rows")
	flag.BoolVar(&o.sftp, "sftp", false, "run the SFTP benchmark: a CSV file of customers through the SFTP drop directory, then the same file over HTTP")
	flag.Int64Var(&o.csvBytes, "csv-bytes", 1_000_000_000, "with -sftp: size of the generated CSV file")
	flag.StringVar(&o.csv, "csv", "", "with -sftp: the CSV file to write once and reuse (default <dir>/customers-<csv-bytes>.csv)")
	flag.BoolVar(&o.transferOnly, "transfer-only", false, "with -sftp: only the SFTP transfer and staging (until the run is scheduled), no import end to end and no HTTP")
	flag.BoolVar(&o.httpFirst, "http-first", false, "with -sftp: send the file over HTTP first, then by SFTP")
	flag.StringVar(&o.bus, "bus", "", "nats: run the load end to end with the PostgreSQL transport, then with NATS JetStream (a private nats-server), and compare")
	flag.IntVar(&o.busRounds, "bus-rounds", 1, "with -bus: rounds of both transports, each round in the other order than the one before")
	flag.BoolVar(&o.console, "console", false, "time the console's pages (p50/p95 of 20 loads each) with -n customers in the company (console.go)")
	flag.BoolVar(&o.flood, "flood", false, "one company floods oversized refused requests while another's small requests are timed (flood.go)")
	flag.IntVar(&o.floodSenders, "flood-senders", 8, "with -flood: requests at once")
	flag.IntVar(&o.floodBytes, "flood-bytes", 10_000_000, "with -flood: the size of each body")
	flag.DurationVar(&o.floodFor, "flood-for", 30*time.Second, "with -flood: how long the flood lasts")
	flag.BoolVar(&o.endToEndOnly, "end-to-end-only", false, "stop once the records are retrievable (no reads, no COPY, upsert or floor baselines) and report the segment_members projector's lag and fact rows")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if o.bus != "" {
		if o.bus != "nats" {
			fmt.Fprintf(os.Stderr, "clientele-load: -bus %q: want nats\n", o.bus)
			os.Exit(2)
		}
		res, err := runBus(ctx, o)
		if err != nil {
			fmt.Fprintln(os.Stderr, "clientele-load:", err)
			os.Exit(1)
		}
		res.print(os.Stdout)
		return
	}
	if o.flood {
		res, err := runFlood(ctx, o)
		if err != nil {
			fmt.Fprintln(os.Stderr, "clientele-load:", err)
			os.Exit(1)
		}
		res.print(os.Stdout)
		return
	}
	if o.console {
		res, err := runConsole(ctx, o)
		if err != nil {
			fmt.Fprintln(os.Stderr, "clientele-load:", err)
			os.Exit(1)
		}
		res.print(os.Stdout)
		return
	}
	if o.entity == "segments" {
		res, err := runSegmentScale(ctx, o)
		if err != nil {
			fmt.Fprintln(os.Stderr, "clientele-load:", err)
			os.Exit(1)
		}
		res.print(os.Stdout)
		return
	}
	if o.sftp {
		res, err := runSFTP(ctx, o)
		if err != nil {
			fmt.Fprintln(os.Stderr, "clientele-load:", err)
			os.Exit(1)
		}
		res.print(os.Stdout)
		return
	}
	res, err := run(ctx, o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "clientele-load:", err)
		os.Exit(1)
	}
	res.print(os.Stdout)
}

// result holds the figures of one run.
type result struct {
	entity     string
	n          int
	bytes      int64
	uploadTime time.Duration
	endToEnd   time.Duration
	// applied is when the import runs had applied every chunk (their
	// events committed), before the read model caught up with them.
	applied        time.Duration
	copyTime       time.Duration
	upsertTime     time.Duration
	peakRSSKiB     int64
	accepted       int
	rejected       int
	copyRowsPerSec float64
	e2eRowsPerSec  float64
	uploadPerSec   float64
	ratioToCopy    float64
	uploadMBPerSec float64
	// cpuEndToEnd and cpuUpserts are the CPU of the import end to end (of
	// PostgreSQL and the server) and of the upserts (of PostgreSQL and
	// the driver, which generates and decodes the records): cpu.go.
	cpuEndToEnd, cpuUpserts cpuSpent
	// floor is the least time storing a customers run's rows takes
	// (floor.go).
	floor floorResult
	// reads holds the figures of the reads, in a customers run (reads.go).
	reads readResult
	// segments holds the segment_members projector's figures, with
	// -end-to-end-only.
	segments *segmentFigures
	// campaigns holds the figures of a campaigns run instead.
	campaigns *campaignResult
}

func (r result) print(w *os.File) {
	if r.campaigns != nil {
		r.campaigns.print(w)
		return
	}
	fmt.Fprintf(w, "entity:              %s\n", r.entity)
	fmt.Fprintf(w, "records:             %d (%.0f MB of JSON, %d accepted, %d rejected)\n", r.n, float64(r.bytes)/1e6, r.accepted, r.rejected)
	fmt.Fprintf(w, "upload acceptance:   %.0f records/s (%.1f MB/s, %.1fs)\n", r.uploadPerSec, r.uploadMBPerSec, r.uploadTime.Seconds())
	fmt.Fprintf(w, "end to end:          %.0f records/s (%.1fs until all retrievable)\n", r.e2eRowsPerSec, r.endToEnd.Seconds())
	if r.applied > 0 {
		fmt.Fprintf(w, "runs applied:        %.0f records/s (%.1fs until every run finished)\n", float64(r.accepted)/r.applied.Seconds(), r.applied.Seconds())
	}
	if r.segments != nil {
		pg, srv, total := r.cpuEndToEnd.perRecord(r.accepted)
		fmt.Fprintf(w, "CPU, end to end:     %.0f µs a record (PostgreSQL %.0f, server %.0f)\n", total, pg, srv)
		r.segments.print(w)
		return
	}
	fmt.Fprintf(w, "COPY into jsonb:     %.0f records/s (%.1fs)\n", r.copyRowsPerSec, r.copyTime.Seconds())
	fmt.Fprintf(w, "end to end / COPY:   %.3f\n", r.ratioToCopy)
	if r.upsertTime > 0 {
		// The conventional store of the same records (upsert.go).
		upserts := float64(r.n) / r.upsertTime.Seconds()
		fmt.Fprintf(w, "batched upserts:     %.0f records/s (%.1fs, %d rows a statement)\n", upserts, r.upsertTime.Seconds(), upsertBatch)
		fmt.Fprintf(w, "end to end / upserts: %.3f\n", r.e2eRowsPerSec/upserts)
		r.floor.print(w, "upserts", upserts)
		pg, srv, total := r.cpuEndToEnd.perRecord(r.accepted)
		fmt.Fprintf(w, "CPU, end to end:     %.0f µs a record (PostgreSQL %.0f, server %.0f; %.2f cores busy)\n",
			total, pg, srv, (r.cpuEndToEnd.pg+r.cpuEndToEnd.other).Seconds()/r.endToEnd.Seconds())
		pg, drv, total := r.cpuUpserts.perRecord(r.n)
		fmt.Fprintf(w, "CPU, upserts:        %.0f µs a record (PostgreSQL %.0f, driver %.0f)\n", total, pg, drv)
	}
	fmt.Fprintf(w, "server peak RSS:     %.0f MB\n", float64(r.peakRSSKiB)/1024)
	if r.reads.paging > 0 {
		r.reads.print(w, r.copyRowsPerSec)
	}
}
