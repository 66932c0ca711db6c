package imports_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"

	"github.com/clientele/clientele/commands"
	"github.com/clientele/clientele/commands/imports"
	"github.com/clientele/clientele/domain/access"
	"github.com/clientele/clientele/domain/company"
	"github.com/clientele/clientele/domain/importing"
	"github.com/clientele/clientele/internal/crypto"
	"github.com/clientele/clientele/internal/pg/pgtest"
	"github.com/clientele/clientele/readmodels"
)

// preparedSpy is the customers importer as a Preparer only (resolving
// ahead has TestImportWorkerResolvesCustomersAhead), noting which chunks
// came prepared ahead.
type preparedSpy struct {
	importer *imports.CustomerImporter
	mu       sync.Mutex
	prepared map[int]bool
}

func (s *preparedSpy) Entity() importing.Entity { return s.importer.Entity() }

func (s *preparedSpy) Prepare(co company.Company, records []json.RawMessage) imports.Prepared {
	return s.importer.Prepare(co, records)
}

func (s *preparedSpy) ImportChunk(ctx context.Context, tx pgx.Tx, c imports.Chunk) (importing.Outcome, error) {
	s.mu.Lock()
	s.prepared[c.Seq] = c.Prepared != nil
	s.mu.Unlock()
	return s.importer.ImportChunk(ctx, tx, c)
}

// TestParseAhead checks that a run's next chunk is parsed while the
// current one is applied, and that a preparation made for a company whose
// settings changed since is not used: records with the company's new
// short name, prepared when the company had another, are accepted.
func TestParseAhead(t *testing.T) {
	ctx := context.Background()
	e := newImportEnv(t, pgtest.NewPool(t))
	kr, err := crypto.NewKeyring(crypto.NewMasterKey())
	if err != nil {
		t.Fatal(err)
	}
	spy := &preparedSpy{importer: imports.NewCustomerImporter(e.store, crypto.KeyStore{Keyring: kr}, time.Now), prepared: map[int]bool{}}
	h := imports.NewImportChunkHandler(e.pool, e.keys, map[importing.Entity]imports.Importer{importing.Customers: spy}, readmodels.NewCompanies(e.pool, ""))

	body := `[{"external_id": "a1"}, {"external_id": "a2"},
		{"external_id": "b1", "NEWCO__tier": "gold"}, {"external_id": "b2", "NEWCO__tier": "silver"},
		{"external_id": "c1"}, {"external_id": "c2"}]`
	run := e.stage(strings.NewReader(body), 2)
	if err := h.Handle(ctx, imports.ImportChunk{RunID: run, Seq: 0}); err != nil {
		t.Fatal(err)
	}
	short := "NEWCO"
	if _, err := commands.NewUpdateCompanySettingsHandler(e.store, time.Now).Handle(ctx, commands.UpdateCompanySettings{
		Principal: access.System(""), CompanyID: e.co.ID, Change: company.SettingsChange{ShortName: &short},
	}); err != nil {
		t.Fatal(err)
	}
	for seq := 1; seq < 3; seq++ {
		if err := h.Handle(ctx, imports.ImportChunk{RunID: run, Seq: seq}); err != nil {
			t.Fatal(err)
		}
	}
	if r := e.wait(run); r.Accepted != 6 || r.Rejected != 0 {
		t.Errorf("run: %d accepted, %d rejected, want 6 and 0", r.Accepted, r.Rejected)
	}
	// Chunk 1 was prepared under the old short name and parsed again;
	// chunk 2 was prepared under the new one and used.
	if diff := cmp.Diff(map[int]bool{0: false, 1: false, 2: true}, spy.prepared); diff != "" {
		t.Errorf("chunks that came prepared (-want +got):\n%s", diff)
	}
}
