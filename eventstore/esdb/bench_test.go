package esdb_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/clientele/clientele/eventstore"
	"github.com/clientele/clientele/eventstore/memory"
	"github.com/clientele/clientele/eventstore/postgres"
	"github.com/clientele/clientele/internal/pg/pgtest"
)

// BenchmarkStore appends commits to the adapter and to the memory store,
// interleaved, then reads both logs back with ReadLog in pages of 1,000,
// and reports each rate and the adapter's as a fraction of memory's. The
// shapes are an API command (one event) and an import chunk (1,000 new
// streams of one event, above inlineMax: its events go to a parts stream).
//
// Against the stand-in (the default) it measures the adapter's own cost
// (encoding, gRPC, the index) plus an in-memory server, not EventStoreDB;
// with CLIENTELE_ESDB_URL set it runs against that server instead. Run it
// with -benchtime 1x.
func BenchmarkStore(b *testing.B) {
	shapes := []struct {
		name            string
		commits, events int
	}{
		{"api", 2000, 1},
		{"import", 50, 1000},
	}
	for _, sh := range shapes {
		b.Run(sh.name, func(b *testing.B) {
			url := benchURL(b)
			ctx := context.Background()
			var appendT, readT [2]time.Duration // 0: esdb, 1: memory
			for b.Loop() {
				stores := [2]eventstore.Store{open(b, url, ""), memory.New()}
				for i := range sh.commits {
					c := benchCommit(i, sh.events)
					for k, s := range stores {
						start := time.Now()
						if _, err := s.Append(ctx, c); err != nil {
							b.Fatalf("commit %d: %v", i, err)
						}
						appendT[k] += time.Since(start)
					}
				}
				for k, s := range stores {
					start := time.Now()
					n, after := 0, eventstore.Position{}
					for {
						page, err := s.ReadLog(ctx, after, 1000)
						if err != nil {
							b.Fatal(err)
						}
						if len(page) == 0 {
							break
						}
						n += len(page)
						after = page[len(page)-1].Position
					}
					readT[k] += time.Since(start)
					if n != sh.commits*sh.events {
						b.Fatalf("read %d events, want %d", n, sh.commits*sh.events)
					}
				}
			}
			total := float64(sh.commits * sh.events * b.N)
			b.ReportMetric(total/appendT[0].Seconds(), "esdb-append-events/s")
			b.ReportMetric(total/appendT[1].Seconds(), "mem-append-events/s")
			b.ReportMetric(appendT[1].Seconds()/appendT[0].Seconds(), "append-esdb/mem")
			b.ReportMetric(total/readT[0].Seconds(), "esdb-read-events/s")
			b.ReportMetric(total/readT[1].Seconds(), "mem-read-events/s")
			b.ReportMetric(readT[1].Seconds()/readT[0].Seconds(), "read-esdb/mem")
		})
	}
}

func benchURL(b *testing.B) string {
	b.Helper()
	srv, err := standIn()
	if err != nil {
		b.Fatal(err)
	}
	if u := envURL(); u != "" {
		return u
	}
	return srv.URL()
}

func benchCommit(i, events int) eventstore.Commit {
	c := eventstore.Commit{Metadata: eventstore.Metadata{
		CompanyID: "acme", RunID: "run-20240612-0001", Actor: "integrations/17",
		Source: "sftp", CorrelationID: "0b7f6c1e-93c4-4f0e-9a55-2f0d51e3a6b2",
	}}
	for j := range events {
		n := i*events + j
		data := fmt.Appendf(nil, `{"customer_id":"%016x","email":"customer.%d@example.com","first_name":"Anna-Maria","last_name":"Lindqvist %d","phone":"+46 70 %07d","city":"Göteborg","country":"SE","consents":{"email":true,"sms":false},"tags":["vip","newsletter"],"loyalty_points":%d}`,
			n, n, n%977, n%10000000, n%5000)
		c.Streams = append(c.Streams, eventstore.StreamAppend{
			StreamID:        fmt.Sprintf("customer-acme-%016x", n),
			ExpectedVersion: eventstore.NoStream,
			Events:          []eventstore.Event{{Type: "CustomerImported", Data: data}},
		})
	}
	return c
}

// BenchmarkCoupled appends the same commits, interleaved, to the adapter
// alone, to the adapter coupled with PostgreSQL (each commit's PostgreSQL
// transaction prepared, then decided by the append: esdb.Coupled.Append)
// and to the PostgreSQL store, on one PostgreSQL, and reports each rate
// and the coupled store's as a fraction of the two others'. The coupled
// store's cost over the adapter alone is PostgreSQL's share (the
// transaction, the locks, PREPARE, COMMIT PREPARED, the catch-up read);
// over the PostgreSQL store, what the log in EventStoreDB costs. Against
// the stand-in, not EventStoreDB (see BenchmarkStore). Run it with
// -benchtime 1x.
func BenchmarkCoupled(b *testing.B) {
	shapes := []struct {
		name            string
		commits, events int
	}{
		{"api", 1000, 1},
		{"import", 20, 1000},
	}
	for _, sh := range shapes {
		b.Run(sh.name, func(b *testing.B) {
			url := benchURL(b)
			ctx := context.Background()
			var took [3]time.Duration // esdb, coupled, postgres
			for b.Loop() {
				pool := pgtest.NewPool(b)
				stores := [3]eventstore.Store{open(b, url, ""), open(b, url, "").WithPostgres(pool), postgres.New(pool)}
				for i := range sh.commits {
					c := benchCommit(i, sh.events)
					for k, s := range stores {
						start := time.Now()
						if _, err := s.Append(ctx, c); err != nil {
							b.Fatalf("store %d, commit %d: %v", k, i, err)
						}
						took[k] += time.Since(start)
					}
				}
			}
			total := float64(sh.commits * sh.events * b.N)
			b.ReportMetric(total/took[0].Seconds(), "esdb-events/s")
			b.ReportMetric(total/took[1].Seconds(), "coupled-events/s")
			b.ReportMetric(total/took[2].Seconds(), "pg-events/s")
			b.ReportMetric(took[0].Seconds()/took[1].Seconds(), "coupled/esdb")
			b.ReportMetric(took[2].Seconds()/took[1].Seconds(), "coupled/pg")
		})
	}
}
