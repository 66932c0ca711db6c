package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/clientele/clientele/commands/imports"
	"github.com/clientele/clientele/commands/imports/testimporter"
	"github.com/clientele/clientele/domain/importing"
	"github.com/clientele/clientele/eventstore/postgres"
	"github.com/clientele/clientele/internal/pg/pgtest"
)

// withTestImporter makes the app import customers with the test Importer
// (one event per record; a record with a "bad" field is rejected).
func withTestImporter(t *testing.T) {
	t.Helper()
	old := importersFor
	importersFor = func(*app) map[importing.Entity]imports.Importer {
		return map[importing.Entity]imports.Importer{importing.Customers: &testimporter.Importer{Store: postgres.New(nil)}}
	}
	t.Cleanup(func() { importersFor = old })
}

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestImportCommand imports a JSON and a CSV file, alone and then while
// serve runs on the same database (its worker shares the consumer group).
func TestImportCommand(t *testing.T) {
	withTestImporter(t)
	getenv := env(map[string]string{"DATABASE_URL": pgtest.URL(t), "CLIENTELE_LOG_LEVEL": "warn", "CLIENTELE_DATA_DIR": t.TempDir()})
	mustRun(t, getenv, "company", "create", "acme", "--name", "ACME")

	var b strings.Builder
	b.WriteString("[")
	for i := range 2500 {
		if i > 0 {
			b.WriteString(",")
		}
		if i == 7 || i == 2100 {
			fmt.Fprintf(&b, `{"id": "r%d", "bad": true}`, i)
			continue
		}
		fmt.Fprintf(&b, `{"id": "r%d"}`, i)
	}
	b.WriteString("]")
	jsonFile := writeFile(t, "customers.json", b.String())
	csvFile := writeFile(t, "customers.csv", "id;first_name\nc1;Ann\nc2;\n;Nobody\n")

	var out, errOut bytes.Buffer
	if err := run(context.Background(), []string{"import", "--company", "acme", "--entity", "customers", jsonFile}, &out, &errOut, getenv); err != nil {
		t.Fatalf("import: %v\n%s", err, errOut.String())
	}
	if !regexp.MustCompile(`(?s)completed.*2500 received, 2498 accepted, 2 rejected\n` +
		`RECORD +FIELD +REASON\n7 +bad +records with a bad field are refused\n2100 +bad`).MatchString(out.String()) {
		t.Errorf("import printed:\n%s", out.String())
	}
	for _, want := range []string{"staging", "importing", "2500/2500"} {
		if !strings.Contains(errOut.String(), want) {
			t.Errorf("progress lacks %q:\n%s", want, errOut.String())
		}
	}

	_, _, stop := startServe(t, getenv)
	defer stop()
	out2 := mustRun(t, getenv, "import", "--company", "acme", csvFile)
	if !strings.Contains(out2, "3 received, 2 accepted, 1 rejected") || !strings.Contains(out2, "id is required") {
		t.Errorf("CSV import printed:\n%s", out2)
	}
	out3 := mustRun(t, getenv, "import", "--company", "acme", "--format", "json", jsonFile)
	if !strings.Contains(out3, "2500 received, 2498 accepted, 2 rejected") {
		t.Errorf("import while serve runs printed:\n%s", out3)
	}
	stop()

	err := run(context.Background(), []string{"import", "--company", "acme", "--entity", "sales", jsonFile}, &out, &errOut, getenv)
	if err == nil || !strings.Contains(err.Error(), "importable: customers") {
		t.Errorf("importing sales without an importer: %v", err)
	}
}
