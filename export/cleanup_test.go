package export_test

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/clientele/clientele/eventstore"
	"github.com/clientele/clientele/export"
	"github.com/clientele/clientele/internal/pg/pgtest"
	"github.com/clientele/clientele/projections"
)

// oneCommitLog is a company's log of one commit.
type oneCommitLog struct{}

func (oneCommitLog) Head(context.Context) (eventstore.Position, error) {
	return eventstore.Position{TxID: 1, Global: 1}, nil
}

func (oneCommitLog) ReadCompanyLog(_ context.Context, companyID string, after, _ eventstore.Position, _ int) ([]eventstore.RecordedEvent, error) {
	if !after.IsZero() {
		return nil, nil
	}
	return []eventstore.RecordedEvent{{StreamID: "s", StreamVersion: 1, Type: "T", Data: []byte(`{}`),
		Metadata: eventstore.Metadata{CompanyID: companyID}, RecordedAt: time.Now().Add(-time.Hour), Position: eventstore.Position{TxID: 1, Global: 1}}}, nil
}

// failingCustomers stands for the customers projector: it writes a row
// into the scratch copy, then fails (or cancels the export, as an
// interrupt does).
type failingCustomers struct{ fail func() error }

func (failingCustomers) Name() string     { return "customers" }
func (failingCustomers) Tables() []string { return []string{"customers"} }
func (p failingCustomers) Apply(ctx context.Context, tx pgx.Tx, _ []eventstore.RecordedEvent) error {
	if _, err := tx.Exec(ctx, `INSERT INTO customers (company_id, customer_id, doc, version, created_at, updated_at)
		VALUES ('c', 'x', '{}', 1, now(), now())`); err != nil {
		return err
	}
	return p.fail()
}

func scratchSchemas(t *testing.T, pool *pgxpool.Pool) int {
	t.Helper()
	var n int
	if err := pool.QueryRow(context.Background(), `SELECT count(*) FROM pg_namespace WHERE nspname LIKE 'scratch_%'`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestExportCleansUp fails an export in its replay, by an error and by an
// interrupt (its context cancelled), and finds neither a scratch schema
// nor a file left; a schema left by a process that died is dropped by
// the next export.
func TestExportCleansUp(t *testing.T) {
	pool := pgtest.NewPool(t)
	boom := errors.New("boom")
	for name, fail := range map[string]func(cancel context.CancelFunc) error{
		"error":     func(context.CancelFunc) error { return boom },
		"interrupt": func(cancel context.CancelFunc) error { cancel(); return context.Canceled },
	} {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			dir := t.TempDir()
			_, err := export.Run(ctx, export.Config{Pool: pool, Log: oneCommitLog{},
				Projectors: []projections.Projector{failingCustomers{fail: func() error { return fail(cancel) }}},
				Tables:     export.Tables()[:1]},
				export.Request{CompanyID: "c", Format: export.Parquet, Dir: dir})
			if err == nil {
				t.Fatal("the export did not fail")
			}
			if n := scratchSchemas(t, pool); n != 0 {
				t.Errorf("%d scratch schemas left", n)
			}
			if files, _ := os.ReadDir(dir); len(files) != 0 {
				t.Errorf("files left: %v", files)
			}
		})
	}

	t.Run("abandoned", func(t *testing.T) {
		if _, err := pool.Exec(context.Background(), `CREATE SCHEMA scratch_0123456789abcdef`); err != nil {
			t.Fatal(err)
		}
		_, err := export.Run(context.Background(), export.Config{Pool: pool, Log: oneCommitLog{},
			Projectors: []projections.Projector{failingCustomers{fail: func() error { return nil }}}, Tables: export.Tables()[:1]},
			export.Request{CompanyID: "c", Format: export.NDJSON, Dir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		if n := scratchSchemas(t, pool); n != 0 {
			t.Errorf("%d scratch schemas left", n)
		}
	})
}
