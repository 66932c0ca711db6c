package imports_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"

	"github.com/clientele/clientele/commands/imports"
	"github.com/clientele/clientele/commands/imports/testimporter"
	"github.com/clientele/clientele/domain/importing"
	"github.com/clientele/clientele/domain/values"
	"github.com/clientele/clientele/eventstore"
	"github.com/clientele/clientele/internal/pg/pgtest"
)

// importOutcome applies records as one chunk of run "run-1", with the
// records of reject refused as the store-refused ones are
// (chunk_isolate.go), and returns the outcome.
func (e *customerEnv) importOutcome(t *testing.T, reject map[int]string, records ...string) importing.Outcome {
	t.Helper()
	ctx := context.Background()
	c := imports.Chunk{Company: e.company, RunID: "run-1", Seq: e.seq, FirstIndex: e.index, Reject: reject, MayDestroy: true,
		Metadata: eventstore.Metadata{CompanyID: e.company.ID, RunID: "run-1", Actor: "users/u1", Source: "api"}}
	for _, r := range records {
		c.Records = append(c.Records, json.RawMessage(r))
	}
	e.seq++
	e.index += len(records)
	var out importing.Outcome
	err := pgx.BeginFunc(ctx, e.pool, func(tx pgx.Tx) error {
		var err error
		out, err = e.importer.ImportChunk(ctx, tx, c)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestImportWarnings: an Importer's outcome lists each field its accepted
// records ignored once, with the number of them and the first one's
// upload index, in that order; the records rejected, when parsed (no
// identifier), when decided (a deleted customer) or unparsed because the
// store refuses them (Chunk.Reject), count in no warning.
func TestImportWarnings(t *testing.T) {
	e := newCustomerEnv(t)
	e.chunk(t, `{"external_id": "gone"}`)
	e.chunk(t, `{"external_id": "gone", "is_deleted": true}`)
	out := e.importOutcome(t, map[int]string{4: "the database refused the record"},
		`{"external_id": "gone", "store_id": 1, "rejected_decided": 1}`, // 2: the customer is deleted
		`{"first_name": "No Id", "store_id": 1, "rejected_parsed": 1}`,  // 3: no identifier
		`{"external_id": "w1", "store_id": 1, "mage_type": "simple", "OTHER__x": 1, "Ann Smith": 1}`,
		`{"external_id": "w2", "store_id": "2", "ACME__kept": 1}`,
		`{"external_id": "w3", "store_id": 3, "rejected_refused": 1}`, // 6: refused by the store
		`{"external_id": "w4", "mage_type": "configurable"}`,
	)
	if out.Accepted != 3 || len(out.Rejections) != 3 {
		t.Errorf("accepted %d, rejected %v; want 3 and 3", out.Accepted, out.Rejections)
	}
	want := []importing.Warning{
		{Field: values.UnnamedField, Count: 1, FirstIndex: 4},
		{Field: "OTHER__x", Count: 1, FirstIndex: 4},
		{Field: "mage_type", Count: 2, FirstIndex: 4},
		{Field: "store_id", Count: 2, FirstIndex: 4},
	}
	if diff := cmp.Diff(want, out.Warnings); diff != "" {
		t.Errorf("warnings (-want +got):\n%s", diff)
	}
}

// TestImportWarningsBounded: a chunk lists at most importing.MaxWarnings
// fields, however many odd keys its records carry (a CSV file of endless
// columns), and goes on counting those it lists.
func TestImportWarningsBounded(t *testing.T) {
	e := newCustomerEnv(t)
	var odd strings.Builder
	for i := range importing.MaxWarnings + 500 {
		fmt.Fprintf(&odd, `, "col%05d": 1`, i)
	}
	out := e.importOutcome(t, nil, `{"external_id": "b1"`+odd.String()+`}`, `{"external_id": "b2"`+odd.String()+`}`)
	if len(out.Warnings) != importing.MaxWarnings {
		t.Fatalf("%d warnings, want %d", len(out.Warnings), importing.MaxWarnings)
	}
	if first, last := out.Warnings[0], out.Warnings[len(out.Warnings)-1]; first != (importing.Warning{Field: "col00000", Count: 2, FirstIndex: 0}) ||
		last != (importing.Warning{Field: fmt.Sprintf("col%05d", importing.MaxWarnings-1), Count: 2, FirstIndex: 0}) {
		t.Errorf("warnings from %+v to %+v, want the first %d columns, each of both records", first, last, importing.MaxWarnings)
	}
}

// TestImportWorkerWarningBug checks that an Importer that reports a
// warning of records it did not accept fails the run rather than storing
// it.
func TestImportWorkerWarningBug(t *testing.T) {
	e := newImportEnv(t, pgtest.NewPool(t))
	run := e.stage(upload(3, nil), 10)
	e.startWorker(func(cfg *imports.ImportWorkerConfig) {
		cfg.Importers = map[importing.Entity]imports.Importer{importing.Customers: warningLiar{e.imp}}
	})
	if r := e.wait(run); r.State != importing.Failed || !strings.Contains(r.Failure, "a warning of 4 records") {
		t.Errorf("run: %+v", r)
	}
}

// warningLiar reports a field ignored in one record more than it accepted.
type warningLiar struct{ *testimporter.Importer }

func (l warningLiar) ImportChunk(ctx context.Context, tx pgx.Tx, c imports.Chunk) (importing.Outcome, error) {
	out, err := l.Importer.ImportChunk(ctx, tx, c)
	out.Warnings = append(out.Warnings, importing.Warning{Field: "store_id", Count: out.Accepted + 1, FirstIndex: c.FirstIndex})
	return out, err
}
