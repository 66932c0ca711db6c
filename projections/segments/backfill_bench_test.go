package segments_test

import (
	"context"
	"fmt"
	"github.com/clientele/clientele/readmodels/segmentfactstest"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/clientele/clientele/internal/pg/pgtest"
	"github.com/clientele/clientele/projections/segments"
)

// newSegments are the segments whose backfill BenchmarkBackfill times,
// one at a time: one of each kind of leaf, and one of them all.
var newSegments = [][2]string{
	{"field", `{"field":"city","eq":"Helsinki"}`},
	{"event", `{"event":{"type":"BROWSE","within_days":7}}`},
	{"sales", `{"sales":{"within_days":30,"min_revenue":5000}}`},
	{"mixed", `{"all":[{"any":[{"segment":"s04"},{"field":"age","gte":30}]},
		{"event":{"type":"CLICK","where":[{"field":"label","in":["home","cart"]}],"within_days":30}},
		{"not":{"sales":{"within_days":30,"product_id":"P1"}}}]}`},
}

// BenchmarkBackfill measures the backfill of one new segment over a
// company of 100,000 customers (CLIENTELE_BACKFILL_CUSTOMERS) with 5
// events and 1 sale each and the 20 active segments of mixedRules
// decided, on the facts tables the projection keeps: the backfill as
// built (only the new segment decided, on the facts it reads, in ranges
// of customers), for a new segment of each kind of leaf, and, as the
// baseline, every segment decided for every customer with the evaluator
// of a commit (the backfill before; CLIENTELE_BACKFILL_EVERYONE=false
// leaves it out), in the same run. Each backfill runs in a transaction
// rolled back. It reports customers/s, and logs the ratio.
//
//	go test -run '^$' -bench BenchmarkBackfill -benchtime 1x ./projections/segments/
func BenchmarkBackfill(b *testing.B) {
	n := 100_000
	if s := os.Getenv("CLIENTELE_BACKFILL_CUSTOMERS"); s != "" {
		var err error
		if n, err = strconv.Atoi(s); err != nil {
			b.Fatal(err)
		}
	}
	pool := pgtest.NewPool(b)
	ctx := context.Background()
	now := time.Date(2026, 3, 15, 12, 0, 0, 0, time.UTC)
	const company = "co"
	setup := time.Now()
	tx, err := pool.Begin(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	segmentfactstest.Insert(b, ctx, tx, company, n, now)
	setMixedRules(b, ctx, tx, company)
	if err := segments.BackfillChanged(ctx, tx, company, now, keysOf(mixedRules)); err != nil {
		b.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		b.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `VACUUM ANALYZE segment_customers, segment_activity, segment_sales, segment_members, segment_timers`); err != nil {
		b.Fatal(err)
	}
	var members int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM segment_members`).Scan(&members); err != nil {
		b.Fatal(err)
	}
	b.Logf("%d customers, %d events, %d sales, 20 segments with %d members: set up in %s",
		n, 5*n, n, members, time.Since(setup).Round(time.Millisecond))

	at := now.Add(time.Minute)
	took, cpu := map[string]time.Duration{}, map[string]time.Duration{}
	run := func(name, rule string, decide func(tx pgx.Tx) error) {
		b.Run(name, func(b *testing.B) {
			var total, fastest time.Duration
			for range b.N {
				tx, err := pool.Begin(ctx)
				if err != nil {
					b.Fatal(err)
				}
				defer func() { _ = tx.Rollback(ctx) }()
				setRule(b, ctx, tx, company, "new", rule, "active")
				var backend int
				if err := tx.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&backend); err != nil {
					b.Fatal(err)
				}
				goCPU, pgCPU := processCPU(os.Getpid()), processCPU(backend)
				start := time.Now()
				if err := decide(tx); err != nil {
					b.Fatal(err)
				}
				spent := time.Since(start)
				total += spent
				if fastest == 0 || spent < fastest {
					fastest = spent
				}
				goCPU, pgCPU = processCPU(os.Getpid())-goCPU, processCPU(backend)-pgCPU
				cpu[name] += goCPU + pgCPU
				var entered int
				if err := tx.QueryRow(ctx, `SELECT count(*) FROM segment_members WHERE segment_key = 'new'`).Scan(&entered); err != nil {
					b.Fatal(err)
				}
				if entered == 0 {
					b.Fatal("no member entered: nothing measured")
				}
				b.Logf("%s: %s, the test's process %s of CPU, PostgreSQL's backend %s; %d members",
					name, spent.Round(time.Millisecond), goCPU, pgCPU, entered)
				if err := tx.Rollback(ctx); err != nil {
					b.Fatal(err)
				}
			}
			took[name] = total / time.Duration(b.N)
			b.ReportMetric(float64(n)/took[name].Seconds(), "customers/s")
			// On a shared machine the fastest run is the least disturbed.
			b.ReportMetric(float64(n)/fastest.Seconds(), "fastest-customers/s")
			if cpu[name] > 0 {
				// Go and PostgreSQL mostly take turns on one
				// connection: the rate on an idle machine is about
				// customers per CPU-second of both, or better.
				b.ReportMetric(float64(n)*float64(b.N)/cpu[name].Seconds(), "customers/cpu-s")
			}
		})
	}
	for _, s := range newSegments {
		run(s[0], s[1], func(tx pgx.Tx) error { return segments.BackfillChanged(ctx, tx, company, at, []string{"new"}) })
	}
	if os.Getenv("CLIENTELE_BACKFILL_EVERYONE") == "false" {
		return
	}
	mixed := newSegments[len(newSegments)-1][1]
	run("everyone-mixed", mixed, func(tx pgx.Tx) error { return segments.DecideEveryone(ctx, tx, company, at) })
	if took["mixed"] > 0 && took["everyone-mixed"] > 0 {
		b.Logf("mixed: %.0f customers/s, against %.0f deciding everyone: %.1f times faster",
			float64(n)/took["mixed"].Seconds(), float64(n)/took["everyone-mixed"].Seconds(),
			took["everyone-mixed"].Seconds()/took["mixed"].Seconds())
	}
}

// processCPU is the CPU time the process pid has used (user and
// system), read from /proc; zero where there is none.
func processCPU(pid int) time.Duration {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The fields after the command's closing parenthesis; utime and
	// stime are the 14th and 15th of the line, in clock ticks (100 a
	// second on Linux).
	s := string(stat)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(fields) < 13 {
		return 0
	}
	user, err1 := strconv.ParseInt(fields[11], 10, 64)
	system, err2 := strconv.ParseInt(fields[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0
	}
	return time.Duration(user+system) * 10 * time.Millisecond
}
