package postgres_test

import (
	"context"
	"flag"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/clientele/clientele/eventstore"
	"github.com/clientele/clientele/eventstore/postgres"
	"github.com/clientele/clientele/internal/pg/pgtest"
)

var benchCommits = flag.Int("bench.commits", 1000, "commits of 1,000 events written by BenchmarkAppend")

const eventsPerCommit = 1000

var copyColumns = []string{"global_position", "stream_id", "stream_version", "company_id", "event_type", "data", "metadata", "recorded_at"}

// BenchmarkAppend writes import-sized commits (1,000 new streams of one
// event each) through the store and, interleaved on the same durable
// server, COPYs the same rows into a table without constraints or
// indexes: the floor of what PostgreSQL can do. It reports both rates and
// their ratio; run it with -benchtime 1x.
func BenchmarkAppend(b *testing.B) {
	ctx := context.Background()
	pool := benchDatabase(b)
	if _, err := pool.Exec(ctx, `CREATE TABLE plain_events (
		global_position bigint, transaction_id xid8 DEFAULT pg_current_xact_id(),
		stream_id text, stream_version bigint, company_id text, event_type text,
		data jsonb, metadata jsonb, recorded_at timestamptz)`); err != nil {
		b.Fatal(err)
	}
	store := postgres.New(pool)
	var appendTime, copyTime time.Duration
	for b.Loop() {
		for i := range *benchCommits {
			c := benchCommit(i)
			start := time.Now()
			committed, err := store.Append(ctx, c)
			if err != nil {
				b.Fatalf("commit %d: %v", i, err)
			}
			appendTime += time.Since(start)

			rows := make([][]any, len(committed.Events))
			for j, e := range committed.Events {
				rows[j] = []any{e.Position.Global, e.StreamID, e.StreamVersion, e.Metadata.CompanyID, e.Type, []byte(e.Data), benchMetadata, e.RecordedAt}
			}
			start = time.Now()
			if _, err := pool.CopyFrom(ctx, pgx.Identifier{"plain_events"}, copyColumns, pgx.CopyFromRows(rows)); err != nil {
				b.Fatalf("copy %d: %v", i, err)
			}
			copyTime += time.Since(start)
		}
	}
	total := float64(*benchCommits * eventsPerCommit * b.N)
	appendRate, copyRate := total/appendTime.Seconds(), total/copyTime.Seconds()
	b.ReportMetric(appendRate, "append-events/s")
	b.ReportMetric(copyRate, "copy-events/s")
	b.ReportMetric(appendRate/copyRate, "append/copy")
	var sizes string
	if err := pool.QueryRow(ctx, `SELECT format('events %s (heap %s), streams %s, plain_events %s',
		pg_size_pretty(pg_total_relation_size('events')), pg_size_pretty(pg_relation_size('events')),
		pg_size_pretty(pg_total_relation_size('streams')), pg_size_pretty(pg_total_relation_size('plain_events')))`).Scan(&sizes); err == nil {
		b.Log(sizes)
	}
}

// benchMetadata is the JSON of the commits' metadata, as the store writes it.
var benchMetadata = []byte(`{"company_id":"acme","run_id":"run-20240612-0001","actor":"integrations/17","source":"sftp","correlation_id":"0b7f6c1e-93c4-4f0e-9a55-2f0d51e3a6b2"}`)

func benchCommit(i int) eventstore.Commit {
	c := eventstore.Commit{Metadata: eventstore.Metadata{
		CompanyID: "acme", RunID: "run-20240612-0001", Actor: "integrations/17",
		Source: "sftp", CorrelationID: "0b7f6c1e-93c4-4f0e-9a55-2f0d51e3a6b2",
	}}
	for j := range eventsPerCommit {
		n := uint64(i*eventsPerCommit + j)
		id := fmt.Sprintf("%016x", mix(n)) // external ids arrive in no useful order
		data := fmt.Appendf(nil, `{"customer_id":"%s","email":"customer.%d@example.com","first_name":"Anna-Maria","last_name":"Lindqvist %d","phone":"+46 70 %07d","birth_date":"1987-03-%02d","city":"Göteborg","country":"SE","postal_code":"41%03d","consents":{"email":true,"sms":false},"tags":["vip","newsletter"],"loyalty_points":%d}`,
			id, n, n%977, n%10000000, 1+n%28, n%1000, n%5000)
		c.Streams = append(c.Streams, eventstore.StreamAppend{
			StreamID:        "customer-acme-" + id,
			ExpectedVersion: eventstore.NoStream,
			Events:          []eventstore.Event{{Type: "CustomerImported", Data: data}},
		})
	}
	return c
}

// mix is splitmix64's finaliser: distinct inputs give distinct, scattered
// outputs.
func mix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// benchDatabase is a fresh database on a durable server.
func benchDatabase(b *testing.B) *pgxpool.Pool { return pgtest.DurablePool(b) }
