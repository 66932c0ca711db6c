package projections_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/clientele/clientele/eventstore"
	"github.com/clientele/clientele/internal/pg/pgtest"
	"github.com/clientele/clientele/projections"
)

// customersCopy stands for the customers projector: it keeps the
// customers table and applies nothing (the tests fill the copy).
type customersCopy struct{}

func (customersCopy) Name() string     { return "customers" }
func (customersCopy) Tables() []string { return []string{"customers"} }
func (customersCopy) Apply(context.Context, pgx.Tx, []eventstore.RecordedEvent) error {
	return nil
}

// scratchOfCustomers returns a Scratch of the customers table, on a pool
// of one connection (so that what the Scratch leaves on its session is
// what the pool's next user gets), its copy holding 20,000 customers of
// documents of about 600 bytes, written in no order of their ids.
func scratchOfCustomers(t *testing.T) (*projections.Scratch, *pgxpool.Pool) {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(pgtest.NewPool(t).Config().ConnString())
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = 1
	pool, err := pgxpool.NewWithConfig(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	s, err := projections.NewScratch(t.Context(), pool, []projections.Projector{customersCopy{}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Drop(context.Background()) })
	rows, err := s.Query(t.Context(), `INSERT INTO `+s.Table("customers")+` (company_id, customer_id, doc, version, created_at, updated_at)
		SELECT 'c', md5(i::text), jsonb_build_object('email', 'customer' || i || '@example.com', 'notes', repeat('x', 550)), 1, now(), now()
		FROM generate_series(1, 20000) AS i`)
	if err != nil {
		t.Fatal(err)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return s, pool
}

// TestScratchAnalyzesKeyColumns applies the events after which a Scratch
// first renews its copies' statistics: those of the copy's key columns
// (its primary key's, which the projectors look rows up by) are there,
// and none of its document, whose sampling cost most of the ANALYZE.
func TestScratchAnalyzesKeyColumns(t *testing.T) {
	s, _ := scratchOfCustomers(t)
	events := make([]eventstore.RecordedEvent, 10_000)
	for i := range events {
		events[i] = eventstore.RecordedEvent{StreamID: "s", StreamVersion: int64(i + 1), Type: "Other", Data: []byte(`{}`),
			Metadata: eventstore.Metadata{CompanyID: "c"}, RecordedAt: time.Now(), Position: eventstore.Position{TxID: 1, Global: int64(i + 1)}}
	}
	if err := s.Apply(t.Context(), events); err != nil {
		t.Fatal(err)
	}
	rows, err := s.Query(t.Context(), `SELECT attname FROM pg_stats WHERE schemaname = $1 AND tablename = 'customers' ORDER BY attname`, s.Schema())
	if err != nil {
		t.Fatal(err)
	}
	got, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"company_id", "customer_id"}; !slices.Equal(got, want) {
		t.Errorf("the copy's statistics are of %v, want %v", got, want)
	}
}

// TestScratchReadsCopiesInKeyOrder reads a copy whole in the order of
// its primary key, as an export does: the plan walks the primary key,
// where the planner would otherwise scan and sort (a sort of the copy,
// larger than work_mem, spills to disk); once the Scratch is dropped,
// its connection goes back to the pool with sorts on.
func TestScratchReadsCopiesInKeyOrder(t *testing.T) {
	s, pool := scratchOfCustomers(t)
	if rows, err := s.Query(t.Context(), `ANALYZE `+s.Table("customers")); err != nil {
		t.Fatal(err)
	} else {
		rows.Close()
	}
	rows, err := s.Query(t.Context(), `EXPLAIN SELECT t.customer_id, t.doc::text FROM `+s.Table("customers")+` t
		WHERE t.company_id = $1 ORDER BY t.customer_id`, "c")
	if err != nil {
		t.Fatal(err)
	}
	plan, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(strings.TrimSpace(plan[0]), "Index Scan using customers_pkey") {
		t.Errorf("the copy is read by:\n%s\nwant an index scan of its primary key", strings.Join(plan, "\n"))
	}
	if err := s.Drop(t.Context()); err != nil {
		t.Fatal(err)
	}
	var sort string
	if err := pool.QueryRow(t.Context(), `SHOW enable_sort`).Scan(&sort); err != nil {
		t.Fatal(err)
	}
	if sort != "on" {
		t.Errorf("after Drop, the pool's connection has enable_sort %s, want on", sort)
	}
}
