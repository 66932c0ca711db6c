package segments_test

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"github.com/clientele/clientele/readmodels/segmentfactstest"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/clientele/clientele/domain/activity"
	"github.com/clientele/clientele/eventstore"
	"github.com/clientele/clientele/eventstore/postgres"
	"github.com/clientele/clientele/internal/crypto"
	"github.com/clientele/clientele/internal/pg/pgtest"
	"github.com/clientele/clientele/projections/internal/projectiontest"
	"github.com/clientele/clientele/projections/segments"
)

// Import-sized commits, as the import worker appends them.
const (
	benchCommits         = 4    // commits of each kind
	benchCustomersCommit = 500  // new customers a customers commit
	benchEventsCommit    = 1000 // events a commit, each of another customer
)

// BenchmarkApplyImport measures the membership projector's Apply of
// import commits for a company with the 20 active segments of mixedRules
// decided over 20,000 customers (CLIENTELE_APPLY_CUSTOMERS) with 5 events
// and 1 sale each: commits of 500 new customers, and commits of 1,000
// events (BROWSE, OPEN, CLICK with the fields the where leaves read), each
// of another existing customer, as the load driver's event import. Each
// kind is applied commit by commit (one Apply a commit, as a projector
// that keeps up gets them) and as one page (one Apply of all of them, as
// the catch-up of a projector behind hands a page), in a transaction
// rolled back. It reports records/s and ms a commit.
//
//	go test -run '^$' -bench BenchmarkApplyImport -benchtime 3x ./projections/segments/
func BenchmarkApplyImport(b *testing.B) {
	n := 20_000
	if s := os.Getenv("CLIENTELE_APPLY_CUSTOMERS"); s != "" {
		var err error
		if n, err = strconv.Atoi(s); err != nil {
			b.Fatal(err)
		}
	}
	ctx := context.Background()
	pool := pgtest.NewPool(b)
	var trace *statementTimes
	if os.Getenv("CLIENTELE_APPLY_TRACE") != "" {
		trace = newStatementTimes()
		cfg := pool.Config()
		cfg.ConnConfig.Tracer = trace
		traced, err := pgxpool.NewWithConfig(ctx, cfg)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(traced.Close)
		pool = traced
	}
	kr, err := crypto.NewKeyring(crypto.NewMasterKey())
	if err != nil {
		b.Fatal(err)
	}
	keys := crypto.KeyStore{Keyring: kr}
	store := postgres.New(pool)
	const company = "co"
	now := time.Now().UTC()
	tx, err := pool.Begin(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	segmentfactstest.Insert(b, ctx, tx, company, n, now.Add(-time.Hour))
	setMixedRules(b, ctx, tx, company)
	if err := segments.BackfillChanged(ctx, tx, company, now.Add(-time.Hour), keysOf(mixedRules)); err != nil {
		b.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO segment_clock (company_id, computed_at) VALUES ($1, $2)`, company, now.Add(-time.Hour)); err != nil {
		b.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		b.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `VACUUM ANALYZE segment_customers, segment_activity, segment_sales, segment_members, segment_timers`); err != nil {
		b.Fatal(err)
	}

	m := segments.NewMembers(keys, postgres.EventLog{})
	wanted := m.EventTypes()
	keep := func(c eventstore.Committed) []eventstore.RecordedEvent {
		var out []eventstore.RecordedEvent
		for _, e := range c.Events {
			if slices.Contains(wanted, e.Type) {
				out = append(out, e)
			}
		}
		return out
	}
	var customerCommits, eventCommits [][]eventstore.RecordedEvent
	for k := range benchCommits {
		ids := make([]string, benchCustomersCommit)
		for i := range ids {
			ids[i] = fmt.Sprintf("n%07d", k*benchCustomersCommit+i)
		}
		// New customers, a third of them in Helsinki.
		customerCommits = append(customerCommits, keep(upsertCustomers(b, ctx, store, keys, company, ids, func(i int) map[string]any {
			return map[string]any{"external_id": ids[i], "city": []string{"Helsinki", "Turku", "Espoo"}[i%3], "age": i % 80,
				"can_email": i%2 == 0, "tags": []string{"a", "vip"}[i%2:]}
		})))
		var evs []eventstore.Event
		for i := range benchEventsCommit {
			c := 1 + (k*benchEventsCommit+i)*7%n
			data, _ := json.Marshal(activity.Recorded{ID: int64(100_000_000 + k*benchEventsCommit + i), CustomerID: fmt.Sprintf("%08d", c),
				Type: []string{"BROWSE", "OPEN", "CLICK"}[i%3], Date: now.Add(-time.Duration(i) * time.Minute).Format("2006-01-02T15:04:05Z"),
				Fields: map[string]any{"label": []string{"home", "cart", "list"}[i%3], "price": i % 100, "channel": "app"}})
			evs = append(evs, eventstore.Event{Type: activity.TypeRecorded, Data: data})
		}
		eventCommits = append(eventCommits, keep(projectiontest.MustAppend(b, store, eventstore.Commit{
			Metadata: eventstore.Metadata{CompanyID: company, Source: "test"},
			Streams:  []eventstore.StreamAppend{{StreamID: activity.Stream(company), ExpectedVersion: eventstore.Any, Events: evs}}})))
	}

	run := func(name string, commits [][]eventstore.RecordedEvent, records int, paged bool) {
		b.Run(name, func(b *testing.B) {
			if trace != nil {
				trace.reset()
				defer trace.report(b, name)
			}
			var total time.Duration
			for range b.N {
				tx, err := pool.Begin(ctx)
				if err != nil {
					b.Fatal(err)
				}
				start := time.Now()
				if paged {
					var all []eventstore.RecordedEvent
					for _, c := range commits {
						all = append(all, c...)
					}
					err = m.Apply(ctx, tx, all)
				} else {
					for _, c := range commits {
						if err = m.Apply(ctx, tx, c); err != nil {
							break
						}
					}
				}
				if err != nil {
					b.Fatal(err)
				}
				total += time.Since(start)
				var history int
				if err := tx.QueryRow(ctx, `SELECT count(*) FROM segment_history WHERE at > $1`, now.Add(-time.Minute)).Scan(&history); err != nil {
					b.Fatal(err)
				}
				if history == 0 {
					b.Fatal("no entry nor exit recorded: nothing decided")
				}
				if err := tx.Rollback(ctx); err != nil {
					b.Fatal(err)
				}
			}
			each := total / time.Duration(b.N)
			b.ReportMetric(float64(records*len(commits))/each.Seconds(), "records/s")
			b.ReportMetric(float64(each.Milliseconds())/float64(len(commits)), "ms/commit")
		})
	}
	run("customers", customerCommits, benchCustomersCommit, false)
	run("events", eventCommits, benchEventsCommit, false)
	run("customers-page", customerCommits, benchCustomersCommit, true)
	run("events-page", eventCommits, benchEventsCommit, true)
}

// statementTimes is a pgx tracer that adds up the wall clock of each
// statement, batch and COPY by its text's beginning (CLIENTELE_APPLY_TRACE
// prints them): where a commit's time goes on the PostgreSQL side.
type statementTimes struct {
	mu    sync.Mutex
	took  map[string]time.Duration
	count map[string]int
}

type traceKey struct{}

type traceStart struct {
	label string
	start time.Time
}

func newStatementTimes() *statementTimes {
	return &statementTimes{took: map[string]time.Duration{}, count: map[string]int{}}
}

func label(sql string) string {
	s := strings.Join(strings.Fields(sql), " ")
	if len(s) > 70 {
		s = s[:70]
	}
	return s
}

func (s *statementTimes) begin(ctx context.Context, l string) context.Context {
	return context.WithValue(ctx, traceKey{}, &traceStart{label: l, start: time.Now()})
}

func (s *statementTimes) end(ctx context.Context) {
	t, ok := ctx.Value(traceKey{}).(*traceStart)
	if !ok {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.took[t.label] += time.Since(t.start)
	s.count[t.label]++
}

func (s *statementTimes) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	return s.begin(ctx, label(d.SQL))
}
func (s *statementTimes) TraceQueryEnd(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryEndData) {
	s.end(ctx)
}
func (s *statementTimes) TraceBatchStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceBatchStartData) context.Context {
	var parts []string
	for _, q := range d.Batch.QueuedQueries {
		l := label(q.SQL)
		parts = append(parts, l[:min(len(l), 40)])
	}
	return s.begin(ctx, "batch["+strings.Join(parts, " | ")+"]")
}
func (s *statementTimes) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}
func (s *statementTimes) TraceBatchEnd(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchEndData) {
	s.end(ctx)
}
func (s *statementTimes) TraceCopyFromStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceCopyFromStartData) context.Context {
	return s.begin(ctx, "copy "+d.TableName.Sanitize())
}
func (s *statementTimes) TraceCopyFromEnd(ctx context.Context, _ *pgx.Conn, _ pgx.TraceCopyFromEndData) {
	s.end(ctx)
}

func (s *statementTimes) reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.took)
	clear(s.count)
}

// report logs the statements by time spent, the most first.
func (s *statementTimes) report(b *testing.B, name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	labels := make([]string, 0, len(s.took))
	var total time.Duration
	for l, d := range s.took {
		labels = append(labels, l)
		total += d
	}
	slices.SortFunc(labels, func(x, y string) int { return cmp.Compare(s.took[y], s.took[x]) })
	var sb strings.Builder
	fmt.Fprintf(&sb, "%s: %s in statements\n", name, total.Round(time.Millisecond))
	for _, l := range labels {
		fmt.Fprintf(&sb, "%8s %5d  %s\n", s.took[l].Round(100*time.Microsecond), s.count[l], l)
	}
	b.Log(sb.String())
}
