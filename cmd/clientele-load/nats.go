package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/clientele/clientele/internal/natstest"
)

// The bus benchmark (-bus nats): the same load end to end, uploads to
// every record retrievable, with the PostgreSQL transport and with NATS
// JetStream (a private nats-server started here, as the tests start
// theirs), each run on a fresh database of the same durable server and
// on a fresh nats-server, in one invocation; -bus-rounds alternates the
// order. The figure is the ratio of the two rates.
//
//	go run ./cmd/clientele-load -bus nats -entity customers -n 1000000

// busFigures are one transport's figures.
type busFigures struct {
	transport  string
	uploadTime time.Duration
	endToEnd   time.Duration
	accepted   int
	peakRSSKiB int64
	// natsRSSKiB is the nats-server's peak RSS, on NATS.
	natsRSSKiB int64
}

// busResult holds every run, in the order run.
type busResult struct {
	entity     string
	n          int
	runs       []busFigures
	natsServer string
}

func runBus(ctx context.Context, o options) (busResult, error) {
	res := busResult{entity: o.entity, n: o.n}
	benchN = o.n
	if _, ok := generators[o.entity]; !ok {
		return res, fmt.Errorf("-bus: no generator for entity %q", o.entity)
	}
	if err := os.MkdirAll(o.dir, 0o755); err != nil {
		return res, err
	}
	if bin, err := natstest.Binary(); err == nil {
		if out, err := exec.Command(bin, "--version").Output(); err == nil {
			res.natsServer = strings.TrimSpace(string(out))
		}
	}
	// Rounds alternate the order (PostgreSQL first, then NATS first, ...):
	// on a shared machine the load of the moment weighs on whichever
	// runs then.
	for round := range max(o.busRounds, 1) {
		order := []string{"postgres", "nats"}
		if round%2 == 1 {
			order = []string{"nats", "postgres"}
		}
		for _, transport := range order {
			bus, nats := "postgres", (*natstest.Server)(nil)
			if transport == "nats" {
				// A fresh server a run, as the database is.
				srv, err := natstest.Start(ctx)
				if err != nil {
					return res, err
				}
				bus, nats = srv.URL(), srv
			}
			fig, err := busEndToEnd(ctx, o, bus, nats)
			if nats != nil {
				nats.Close()
			}
			if err != nil {
				return res, fmt.Errorf("%s transport: %w", transport, err)
			}
			fig.transport = transport
			res.runs = append(res.runs, fig)
		}
	}
	return res, nil
}

// busEndToEnd runs the load on a fresh database with serve on bus, and
// measures the uploads and the time until every record is retrievable.
func busEndToEnd(ctx context.Context, o options, bus string, nats *natstest.Server) (busFigures, error) {
	var fig busFigures
	d, err := deploy(ctx, o, "bus", "CLIENTELE_BUS_URL="+bus)
	if err != nil {
		return fig, err
	}
	defer d.close()
	url, srv, token := d.url, d.srv, d.token
	if pre, ok := prerequisites[o.entity]; ok {
		if err := importUntimed(ctx, srv.base, token, pre.entity, pre.n(o.n), o.perUpload); err != nil {
			return fig, err
		}
	}
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return fig, err
	}
	defer conn.Close(context.Background())

	start := time.Now()
	runs, _, err := uploadAll(srv.base, token, o)
	if err != nil {
		return fig, err
	}
	fig.uploadTime = time.Since(start)
	if fig.accepted, _, _, err = waitRetrievable(ctx, conn, srv.base, token, o.entity, runs); err != nil {
		return fig, err
	}
	fig.endToEnd = time.Since(start)
	fig.peakRSSKiB = peakRSS(srv.cmd.Process.Pid)
	if nats != nil {
		fig.natsRSSKiB = peakRSS(nats.PID())
	}
	return fig, nil
}

func (r busResult) print(w *os.File) {
	fmt.Fprintf(w, "entity:              %s\n", r.entity)
	fmt.Fprintf(w, "records:             %d a run\n", r.n)
	total := map[string]time.Duration{}
	for _, f := range r.runs {
		total[f.transport] += f.endToEnd
		fmt.Fprintf(w, "%-9s uploads %.1fs, end to end %.0f records/s (%.1fs, %d accepted), serve peak RSS %.0f MB",
			f.transport+":", f.uploadTime.Seconds(), float64(f.accepted)/f.endToEnd.Seconds(), f.endToEnd.Seconds(), f.accepted, float64(f.peakRSSKiB)/1024)
		if f.natsRSSKiB > 0 {
			fmt.Fprintf(w, ", nats-server peak RSS %.0f MB", float64(f.natsRSSKiB)/1024)
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "nats / postgres:     %.3f (end-to-end rate, all rounds)\n", total["postgres"].Seconds()/total["nats"].Seconds())
	if r.natsServer != "" {
		fmt.Fprintf(w, "nats-server:         %s\n", r.natsServer)
	}
}
