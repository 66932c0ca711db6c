package projections_test

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/clientele/clientele/eventstore"
	"github.com/clientele/clientele/internal/pg/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// counter is the test projector: one row per stream with the number of
// events seen. It is deliberately not idempotent, so that applying a commit
// twice shows; and it counts every event that arrives out of stream order
// (or after a gap) in "disorder".
type counter struct{ name, table string }

func (c counter) Name() string     { return c.name }
func (c counter) Tables() []string { return []string{c.table} }

func (c counter) Apply(ctx context.Context, tx pgx.Tx, events []eventstore.RecordedEvent) error {
	type agg struct {
		company     string
		n, first, l int64
	}
	var order []string
	byStream := map[string]*agg{}
	for _, e := range events {
		a := byStream[e.StreamID]
		if a == nil {
			a = &agg{company: e.Metadata.CompanyID, first: e.StreamVersion, l: e.StreamVersion - 1}
			byStream[e.StreamID] = a
			order = append(order, e.StreamID)
		}
		if e.StreamVersion != a.l+1 {
			return fmt.Errorf("counter: %s: version %d after %d within one call", e.StreamID, e.StreamVersion, a.l)
		}
		a.n++
		a.l = e.StreamVersion
	}
	var streams, companies []string
	var ns, firsts, lasts []int64
	for _, s := range order {
		a := byStream[s]
		streams, companies = append(streams, s), append(companies, a.company)
		ns, firsts, lasts = append(ns, a.n), append(firsts, a.first), append(lasts, a.l)
	}
	// One statement per call, whatever its size. A batch continues a row
	// in order when it starts right after the row's last version.
	_, err := tx.Exec(ctx, `INSERT INTO `+pgx.Identifier{c.table}.Sanitize()+` AS t (stream_id, company_id, n, last_version, disorder)
		SELECT s, c, n, l, CASE WHEN f = 1 THEN 0 ELSE 1 END
		FROM unnest($1::text[], $2::text[], $3::bigint[], $4::bigint[], $5::bigint[]) AS u(s, c, n, f, l)
		ON CONFLICT (stream_id) DO UPDATE SET
			n = t.n + excluded.n,
			last_version = excluded.last_version,
			disorder = t.disorder + CASE WHEN t.last_version + excluded.n = excluded.last_version THEN 0 ELSE 1 END`,
		streams, companies, ns, firsts, lasts)
	return err
}

func createCounterTable(t testing.TB, pool *pgxpool.Pool, table string) {
	t.Helper()
	_, err := pool.Exec(context.Background(), `CREATE TABLE `+pgx.Identifier{table}.Sanitize()+` (
		id           bigint GENERATED ALWAYS AS IDENTITY,
		stream_id    text PRIMARY KEY,
		company_id   text   NOT NULL,
		n            bigint NOT NULL CHECK (n > 0),
		last_version bigint NOT NULL,
		disorder     bigint NOT NULL DEFAULT 0
	)`)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(context.Background(), `CREATE INDEX ON `+pgx.Identifier{table}.Sanitize()+` (company_id)`); err != nil {
		t.Fatal(err)
	}
}

// count is a row of a counter table.
type count struct {
	N, LastVersion, Disorder int64
}

// wantCounts is what a counter table must hold after every event in the
// log was applied exactly once, in order.
func wantCounts(t testing.TB, pool *pgxpool.Pool) map[string]count {
	t.Helper()
	return queryCounts(t, pool, `SELECT stream_id, count(*), max(stream_version), 0 FROM events GROUP BY stream_id`)
}

func gotCounts(t testing.TB, pool *pgxpool.Pool, table string) map[string]count {
	t.Helper()
	return queryCounts(t, pool, `SELECT stream_id, n, last_version, disorder FROM `+pgx.Identifier{table}.Sanitize())
}

func queryCounts(t testing.TB, pool *pgxpool.Pool, sql string) map[string]count {
	t.Helper()
	rows, err := pool.Query(context.Background(), sql)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]count{}
	for rows.Next() {
		var s string
		var c count
		if err := rows.Scan(&s, &c.N, &c.LastVersion, &c.Disorder); err != nil {
			t.Fatal(err)
		}
		out[s] = c
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func checkCounts(t testing.TB, pool *pgxpool.Pool, table string) {
	t.Helper()
	want := wantCounts(t, pool)
	if len(want) == 0 {
		t.Fatal("no events in the log")
	}
	if diff := cmp.Diff(want, gotCounts(t, pool, table)); diff != "" {
		t.Errorf("%s (-want +got):\n%s", table, diff)
	}
}

// metricValue reads the value of a projection's series from reg.
func metricValue(t testing.TB, reg *prometheus.Registry, name, projection string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "projection" && l.GetValue() == projection {
					if m.GetCounter() != nil {
						return m.GetCounter().GetValue()
					}
					return m.GetGauge().GetValue()
				}
			}
		}
	}
	t.Fatalf("no metric %s{projection=%q}", name, projection)
	return 0
}
