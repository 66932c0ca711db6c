package sftp_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"
	pkgsftp "github.com/pkg/sftp"
	"golang.org/x/crypto/ssh"

	"github.com/clientele/clientele/internal/bus"
	"github.com/clientele/clientele/projections"
	"github.com/clientele/clientele/projections/retrieval"
	"github.com/clientele/clientele/sftp"
)

func gz(t *testing.T, data string) []byte {
	t.Helper()
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	if _, err := w.Write([]byte(data)); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestSFTPImportsEachEntity drops one file of each entity, named in any
// case and in either format, compressed or not, and finds each imported
// with source "sftp" (on the run and on its events), then moved to
// processed/ beside its result; toclientele/ is empty again.
func TestSFTPImportsEachEntity(t *testing.T) {
	e := newEnv(t)
	c := e.mustDial()
	files := []struct {
		name string
		data []byte
		n    int64
	}{
		{"customers.csv", []byte("customer_id,email,first_name\nC1,c1@x.test,Ann\nC2,c2@x.test,Bob\n"), 2},
		{"Products-2026-11-24.JSON", []byte(`[{"external_id": "P1", "title": "Runner", "price": 100}]`), 1},
		{"EVENTS_today.csv", []byte("type,date,email,label\nBROWSE,2025-01-02,c1@x.test,home\n"), 1},
		{"sales-2026-11-24.json.gz", gz(t, `{"sales": [{"sale_external_id": "S1", "sale_date": "2025-01-03", "sale_customer_id": "C1", "product_id": "P1", "quantity": 2, "unit_price": 100}]}`), 1},
		{"shops.csv.gz", gz(t, "external_id,name,shop_type\n12,Main Street,offline\n"), 1},
	}
	for _, f := range files {
		put(t, c, "toclientele/"+f.name, f.data)
		// One at a time: a sale names the customer and product before it.
		r := waitResult(t, c, f.name)
		if r.State != "completed" || r.Accepted != f.n || r.Rejected != 0 {
			t.Errorf("%s: result %+v", f.name, r)
		}
		if got, err := read(c, "toclientele/processed/"+f.name); err != nil || !bytes.Equal(got, f.data) {
			t.Errorf("processed/%s: %v, %d bytes, want the file as sent", f.name, err, len(got))
		}
		if got := e.eventSources(r.RunID); !slices.Equal(got, []string{"sftp"}) {
			t.Errorf("%s: sources of the run's events %v, want [sftp]", f.name, got)
		}
	}
	for _, r := range e.runs(e.acme.ID) {
		if r.Source != "sftp" {
			t.Errorf("run %s: source %q", r.ID, r.Source)
		}
	}
	if n := len(e.runs(e.acme.ID)); n != len(files) {
		t.Errorf("%d runs, want %d", n, len(files))
	}
	entries, err := c.ReadDir("toclientele")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, fi := range entries {
		names = append(names, fi.Name())
	}
	if diff := cmp.Diff([]string{"failed", "processed"}, names); diff != "" {
		t.Errorf("toclientele/ (-want +got):\n%s", diff)
	}
	// globex sees none of it.
	g, err := e.dial("globex", e.globexToken)
	if err != nil {
		t.Fatal(err)
	}
	if list, err := g.ReadDir("toclientele/processed"); err != nil || len(list) != 0 {
		t.Errorf("globex's processed/: %v, %v", list, err)
	}
}

// TestSFTPCSVLatin1Semicolons: a CSV file of a Windows program, ";"
// between fields and ISO-8859-1 (windows-1252) text, is read as such: its
// names arrive as they were written.
func TestSFTPCSVLatin1Semicolons(t *testing.T) {
	e := newEnv(t)
	c := e.mustDial()
	// "Jyväskylä" and "Müller" in ISO-8859-1, "€" in windows-1252.
	data := []byte("customer_id;email;last_name;city\r\nC1;c1@x.test;M\xfcller;Jyv\xe4skyl\xe4\r\nC2;c2@x.test;\x80uro;Oulu\r\n")
	put(t, c, "toclientele/customers-latin1.csv", data)
	r := waitResult(t, c, "customers-latin1.csv")
	if r.State != "completed" || r.Accepted != 2 {
		t.Fatalf("result %+v", r)
	}
	got := e.importedValues(e.acme.ID, "last_name", "city")
	want := []string{"Müller", "Jyväskylä", "€uro", "Oulu"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("values (-want +got):\n%s", diff)
	}
}

// TestSFTPRenameToFinalName: a client that uploads under a temporary name
// and renames when done (put x.part; rename x.part x.csv) gets its file
// imported at the rename, not before; hidden and .tmp names are held too.
func TestSFTPRenameToFinalName(t *testing.T) {
	e := newEnv(t)
	c := e.mustDial()
	data := []byte("customer_id,email\nC1,c1@x.test\n")
	put(t, c, "toclientele/customers.csv.part", data)
	put(t, c, "toclientele/.customers.csv", data)
	put(t, c, "toclientele/customers.csv.TMP", data)
	// Held: listed, downloadable, not imported.
	for _, n := range []string{"customers.csv.part", ".customers.csv", "customers.csv.TMP"} {
		if got, err := read(c, "toclientele/"+n); err != nil || !bytes.Equal(got, data) {
			t.Errorf("%s: %v", n, err)
		}
	}
	if runs := e.runs(e.acme.ID); len(runs) != 0 {
		t.Fatalf("held files were imported: %v", runs)
	}
	if err := c.Rename("toclientele/customers.csv.part", "toclientele/customers-1.csv"); err != nil {
		t.Fatal(err)
	}
	if r := waitResult(t, c, "customers-1.csv"); r.State != "completed" || r.Accepted != 1 {
		t.Errorf("result %+v", r)
	}
	// OpenSSH renames with posix-rename, which replaces.
	if err := c.PosixRename("toclientele/customers.csv.TMP", "toclientele/customers-2.csv"); err != nil {
		t.Fatal(err)
	}
	waitResult(t, c, "customers-2.csv")
	// A held file can be removed; a name that is not held cannot.
	if err := c.Remove("toclientele/.customers.csv"); err != nil {
		t.Errorf("remove a held file: %v", err)
	}
	if err := c.Remove("toclientele/customers-1.csv"); err == nil {
		t.Error("removed a file that is not there")
	}
	if n := len(e.runs(e.acme.ID)); n != 2 {
		t.Errorf("%d runs, want 2", n)
	}
}

// TestSFTPSameFileTwice: the same file sent again is a new run, and both
// copies are kept in processed/ with their results.
func TestSFTPSameFileTwice(t *testing.T) {
	e := newEnv(t)
	c := e.mustDial()
	data := []byte("customer_id,email\nC1,c1@x.test\n")
	put(t, c, "toclientele/customers.csv", data)
	r1 := waitResult(t, c, "customers.csv")
	put(t, c, "toclientele/customers.csv", data)
	r2 := waitResult(t, c, "customers.2.csv")
	if r1.RunID == r2.RunID || r1.State != "completed" || r2.State != "completed" {
		t.Errorf("runs %+v and %+v", r1, r2)
	}
}

// TestSFTPResultAndErrorFiles: the result names the rejected records with
// their reasons; files that cannot be imported at all go to failed/
// beside an error.txt that says why.
func TestSFTPResultAndErrorFiles(t *testing.T) {
	e := newEnv(t)
	c := e.mustDial()
	put(t, c, "toclientele/customers.json", []byte(`[{"customer_id": "C1", "email": "c1@x.test"}, {"customer_id": "C2", "email": "not an email"}]`))
	r := waitResult(t, c, "customers.json")
	if r.State != "completed" || r.Accepted != 1 || r.Rejected != 1 || len(r.Rejections) != 1 ||
		r.Rejections[0].Index != 1 || r.Rejections[0].Field != "email" || r.Rejections[0].Reason == "" || r.File != "customers.json" {
		t.Errorf("result %+v", r)
	}
	for _, tt := range []struct {
		name, data string
		want       []string // in the error text
	}{
		{"notes.txt", "hello", []string{"start with what it holds (customers, products, events, sales, shops)", "end in .csv or .json"}},
		{"orders.csv", "a,b\n1,2\n", []string{"start with what it holds"}},
		{"customers.xml", "<x/>", []string{"end in .csv or .json"}},
		{"customers-broken.json", `[{"customer_id": "C1"`, []string{"customers-broken.json was not imported", "JSON"}},
		{"customers-broken.csv.gz", "not gzip at all", []string{"not valid gzip: it does not start with a gzip header"}},
	} {
		put(t, c, "toclientele/"+tt.name, []byte(tt.data))
		text := waitFailed(t, c, tt.name)
		for _, w := range tt.want {
			if !strings.Contains(text, w) {
				t.Errorf("%s: error text %q lacks %q", tt.name, text, w)
			}
		}
	}
	// Only the good file made a run.
	if n := len(e.runs(e.acme.ID)); n != 1 {
		t.Errorf("%d runs, want 1", n)
	}
}

// TestSFTPSizeLimit: a file over the size limit (that of HTTP uploads) is
// refused as it is written, and goes to failed/; so does a .gz file that
// is over it once uncompressed.
func TestSFTPSizeLimit(t *testing.T) {
	e := newEnv(t, withMaxFileBytes(4096))
	c := e.mustDial()
	big := "customer_id,email\n" + strings.Repeat("C1,c1@x.test\n", 1000)
	f, err := c.Create("toclientele/customers-big.csv")
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.Write([]byte(big))
	var se *pkgsftp.StatusError
	if !errors.As(err, &se) || !strings.Contains(se.Error(), "over the size limit of 4096 bytes") {
		t.Errorf("writing past the limit: %v", err)
	}
	f.Close()
	if text := waitFailed(t, c, "customers-big.csv"); !strings.Contains(text, "over the size limit of 4096 bytes") {
		t.Errorf("error text %q", text)
	}
	put(t, c, "toclientele/customers-bomb.csv.gz", gz(t, big))
	if text := waitFailed(t, c, "customers-bomb.csv.gz"); !strings.Contains(text, "over the size limit of 4096 bytes once uncompressed") {
		t.Errorf("error text %q", text)
	}
	if n := len(e.runs(e.acme.ID)); n != 0 {
		t.Errorf("%d runs, want none", n)
	}
}

// TestSFTPInterruptedUpload: a connection dropped in the middle of an
// upload imports nothing and leaves nothing behind.
func TestSFTPInterruptedUpload(t *testing.T) {
	e := newEnv(t)
	c := e.mustDial()
	f, err := c.Create("toclientele/customers.csv")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte("customer_id,email\nC1,c1@x.test\nC2,c2@")); err != nil {
		t.Fatal(err)
	}
	// The file shows as being uploaded.
	if fi, err := c.Stat("toclientele/customers.csv"); err != nil || fi.Size() == 0 {
		t.Errorf("stat during the upload: %v, %v", fi, err)
	}
	c.Close() // the connection goes, the file still open
	waitFor(t, "the cut upload to be deleted", func() bool {
		entries, err := os.ReadDir(e.cfg.Dir + "/incoming")
		return err == nil && len(entries) == 0
	})
	c2 := e.mustDial()
	for _, d := range []string{"toclientele", "toclientele/processed", "toclientele/failed"} {
		list, err := c2.ReadDir(d)
		if err != nil {
			t.Fatal(err)
		}
		for _, fi := range list {
			if !fi.IsDir() {
				t.Errorf("%s/%s is there", d, fi.Name())
			}
		}
	}
	if runs := e.runs(e.acme.ID); len(runs) != 0 {
		t.Errorf("runs %v", runs)
	}
	if !strings.Contains(e.logs.String(), "upload cut short; nothing is imported") {
		t.Error("the cut upload was not logged")
	}
}

// importedValues starts the customers projection and returns the given
// fields of the company's customers once both are projected, ordered by
// email.
func (e *env) importedValues(companyID string, fields ...string) []string {
	e.t.Helper()
	rt, err := projections.NewRuntime(projections.RuntimeConfig{
		Pool: e.pool, Store: e.store, Async: []projections.Projector{retrieval.NewCustomers(e.keys)},
		ConsumerSettings: bus.ConsumerSettings{
			PollInterval: 10 * time.Millisecond, Logger: slog.New(slog.NewJSONHandler(e.logs, nil)),
		},
	})
	if err != nil {
		e.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- rt.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			e.t.Errorf("projections: %v", err)
		}
	}()
	var out []string
	waitFor(e.t, "the customers projected", func() bool {
		rows, err := e.pool.Query(ctx, `SELECT doc FROM customers WHERE company_id = $1 ORDER BY doc->>'email'`, companyID)
		if err != nil {
			e.t.Fatal(err)
		}
		docs, err := pgx.CollectRows(rows, pgx.RowTo[map[string]any])
		if err != nil {
			e.t.Fatal(err)
		}
		out = nil
		for _, d := range docs {
			for _, f := range fields {
				v, _ := d[f].(string)
				out = append(out, v)
			}
		}
		return len(docs) == 2
	})
	return out
}

// TestSFTPSizeLimitOffsets: the size limit counts a write's offset, even
// one so large that offset plus length overflows: the write fails as
// over the limit and the file goes to failed/.
func TestSFTPSizeLimitOffsets(t *testing.T) {
	e := newEnv(t, withMaxFileBytes(4096))
	c := e.mustDial()
	for _, off := range []int64{4096, math.MaxInt64 - 10} {
		name := fmt.Sprintf("customers-%d.csv", off)
		f, err := c.Create("toclientele/" + name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteAt([]byte("customer_id,email\nC1,c1@x.test\n"), off); err == nil || !strings.Contains(err.Error(), "over the size limit") {
			t.Errorf("a write at %d: %v", off, err)
		}
		f.Close()
		if text := waitFailed(t, c, name); !strings.Contains(text, "over the size limit of 4096 bytes") {
			t.Errorf("error text %q", text)
		}
	}
}

// TestSFTPHostKeyCreatedOnce: processes starting at once on a new data
// directory agree on one host key, and none reads it half written.
func TestSFTPHostKeyCreatedOnce(t *testing.T) {
	for range 20 {
		path := filepath.Join(t.TempDir(), "sub", "host_key")
		var wg sync.WaitGroup
		keys := make([]string, 8)
		for i := range keys {
			wg.Go(func() {
				k, _, err := sftp.LoadHostKey(path)
				if err != nil {
					t.Error(err)
					return
				}
				keys[i] = ssh.FingerprintSHA256(k.PublicKey())
			})
		}
		wg.Wait()
		for _, k := range keys[1:] {
			if k != keys[0] {
				t.Fatalf("host keys %v", keys)
			}
		}
		if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
			t.Fatalf("host key file: %v, %v", fi, err)
		}
	}
}

// TestSFTPDiskFull: below the free space the server keeps for the files
// it already received, a new upload is refused, saying why; downloads
// and renames go on.
func TestSFTPDiskFull(t *testing.T) {
	e := newEnv(t)
	c := e.mustDial()
	put(t, c, "toclientele/customers.csv.part", []byte("customer_id,email\nC1,c1@x.test\n"))
	e.cfg.MinFreeBytes = 1 << 62
	e.restart()
	c = e.mustDial()
	if _, err := c.Create("toclientele/customers-2.csv"); err == nil || !strings.Contains(err.Error(), "disk is full") {
		t.Errorf("an upload on a full disk: %v", err)
	}
	if err := c.Rename("toclientele/customers.csv.part", "toclientele/customers.csv"); err != nil {
		t.Fatal(err)
	}
	if r := waitResult(t, c, "customers.csv"); r.State != "completed" {
		t.Errorf("result %+v", r)
	}
}
