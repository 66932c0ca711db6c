package sftp_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	pkgsftp "github.com/pkg/sftp"

	"github.com/clientele/clientele/commands/imports"
	"github.com/clientele/clientele/domain/importing"
	"github.com/clientele/clientele/readmodels"
	"github.com/clientele/clientele/sftp"
)

// TestSFTPFailingFileStopsOnlyItsCompany: a file whose staging keeps
// failing for a reason that may pass is retried before its company's
// later files, but other companies' files are imported meanwhile.
func TestSFTPFailingFileStopsOnlyItsCompany(t *testing.T) {
	var acmeID string
	e := newEnv(t, with(func(c *sftp.Config) {
		real := c.Uploads
		c.Uploads = uploadsFunc(func(ctx context.Context, cmd imports.StageUpload) (imports.StagedUpload, error) {
			if cmd.Principal.CompanyID == acmeID {
				return imports.StagedUpload{}, errors.New("the database is away")
			}
			return real.Handle(ctx, cmd)
		})
	}))
	acmeID = e.acme.ID
	e.restart() // a server that knows acmeID
	put(t, e.mustDial(), "toclientele/customers.csv", []byte("customer_id,email\nC1,c1@x.test\n"))
	g, err := e.dial("globex", e.globexToken)
	if err != nil {
		t.Fatal(err)
	}
	put(t, g, "toclientele/customers.csv", []byte("customer_id,email\nC1,c1@x.test\n"))
	if r := waitResult(t, g, "customers.csv"); r.State != "completed" {
		t.Errorf("globex's result %+v", r)
	}
	if runs := e.runs(e.acme.ID); len(runs) != 0 {
		t.Errorf("acme's runs %v", runs)
	}
}

// TestSFTPPanicFailsOnlyTheFile: a panic while a file is imported (a bug
// its content triggers) sends that file to failed/ rather than stopping
// the process, which would stop again at each start; the next file is
// imported.
func TestSFTPPanicFailsOnlyTheFile(t *testing.T) {
	e := newEnv(t, with(func(c *sftp.Config) {
		real := c.Uploads
		c.Uploads = uploadsFunc(func(ctx context.Context, cmd imports.StageUpload) (imports.StagedUpload, error) {
			br := bufio.NewReader(cmd.Body)
			if b, _ := br.Peek(5); string(b) == "panic" {
				panic("a parser's bug")
			}
			cmd.Body = br
			return real.Handle(ctx, cmd)
		})
	}))
	c := e.mustDial()
	put(t, c, "toclientele/customers-1.csv", []byte("panic,email\n"))
	put(t, c, "toclientele/customers-2.csv", []byte("customer_id,email\nC1,c1@x.test\n"))
	if text := waitFailed(t, c, "customers-1.csv"); !strings.Contains(text, "internal error") || strings.Contains(text, "parser") {
		t.Errorf("error text %q", text)
	}
	if r := waitResult(t, c, "customers-2.csv"); r.State != "completed" {
		t.Errorf("result %+v", r)
	}
}

// TestSFTPSidecarNamesDoNotCollide: a file named like another's result
// or error file keeps its content: the sidecar of the later file takes
// a free name, and so does the later file.
func TestSFTPSidecarNamesDoNotCollide(t *testing.T) {
	e := newEnv(t)
	c := e.mustDial()
	data := []byte(`[{"customer_id": "C1", "email": "c1@x.test"}]`)
	put(t, c, "toclientele/customers.csv.result.json", data)
	waitResult(t, c, "customers.csv.result.json")
	put(t, c, "toclientele/customers.csv", []byte("customer_id,email\nC2,c2@x.test\n"))
	if r := waitResult(t, c, "customers.2.csv"); r.State != "completed" || r.File != "customers.2.csv" {
		t.Errorf("result %+v", r)
	}
	if got, err := read(c, "toclientele/processed/customers.csv.result.json"); err != nil || string(got) != string(data) {
		t.Errorf("processed/customers.csv.result.json is now %q, %v", got, err)
	}

	put(t, c, "toclientele/notes.error.txt", []byte("hello"))
	waitFailed(t, c, "notes.error.txt")
	put(t, c, "toclientele/notes", []byte("world"))
	waitFailed(t, c, "notes.2")
	if got, err := read(c, "toclientele/failed/notes.error.txt"); err != nil || string(got) != "hello" {
		t.Errorf("failed/notes.error.txt is now %q, %v", got, err)
	}
	// What a client cannot name, it does not see: no temporary file
	// is listed, and no client's file is hidden.
	list, err := c.ReadDir("toclientele/failed")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, fi := range list {
		names = append(names, fi.Name())
	}
	if got := strings.Join(names, " "); got != "notes.2 notes.2.error.txt notes.error.txt notes.error.txt.error.txt" {
		t.Errorf("failed/ lists %s", got)
	}
}

// heldRuns reports the runs not yet released as running, whatever they
// are.
type heldRuns struct {
	sftp.Runs
	mu       sync.Mutex
	released map[string]bool
}

func (h *heldRuns) Run(ctx context.Context, companyID, runID string) (readmodels.ImportRun, error) {
	r, err := h.Runs.Run(ctx, companyID, runID)
	h.mu.Lock()
	defer h.mu.Unlock()
	if err == nil && !h.released[runID] {
		r.State, r.FinishedAt = importing.Running, nil
	}
	return r, err
}

func (h *heldRuns) release(runID string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.released[runID] = true
}

// TestSFTPResultRewriteKeepsToItsFile: the result file of a run that
// finishes late is rewritten only if it is still there and still the
// run's: the company may have removed it, and sent a file of the same
// name since, whose result takes the freed name.
func TestSFTPResultRewriteKeepsToItsFile(t *testing.T) {
	runs := &heldRuns{released: map[string]bool{}}
	e := newEnv(t, with(func(c *sftp.Config) { runs.Runs = c.Runs; c.Runs = runs }))
	c := e.mustDial()
	data := []byte("customer_id,email\nC1,c1@x.test\n")
	put(t, c, "toclientele/customers.csv", data)
	var first result
	// The result is written first, then the file moved beside it: wait
	// for both before removing them.
	waitFor(t, "the first result", func() bool {
		first = readResult(t, c, "customers.csv")
		_, err := c.Stat("toclientele/processed/customers.csv")
		return first.RunID != "" && err == nil
	})
	for _, n := range []string{"customers.csv", "customers.csv.result.json"} {
		if err := c.Remove("toclientele/processed/" + n); err != nil {
			t.Fatal(err)
		}
	}
	put(t, c, "toclientele/customers.csv", data)
	var second result
	waitFor(t, "the second result", func() bool {
		second = readResult(t, c, "customers.csv")
		return second.RunID != "" && second.RunID != first.RunID
	})
	runs.release(second.RunID)
	waitResult(t, c, "customers.csv")
	runs.release(first.RunID)
	time.Sleep(20 * e.cfg.PollInterval)
	if r := readResult(t, c, "customers.csv"); r.RunID != second.RunID || r.State != "completed" {
		t.Errorf("customers.csv.result.json is %+v, want the second run's", r)
	}
	list, err := c.ReadDir("toclientele/processed")
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 {
		t.Errorf("processed/ holds %d files, want 2", len(list))
	}
}

// readResult reads processed/<name>.result.json, or returns none.
func readResult(t *testing.T, c *pkgsftp.Client, name string) result {
	t.Helper()
	var r result
	if b, err := read(c, "toclientele/processed/"+name+".result.json"); err == nil {
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatalf("result of %s: %v: %s", name, err, b)
		}
	}
	return r
}

// TestSFTPBadJobLeftAlone: a job that cannot be read (a disk's fault,
// a hand's) is left in the queue, logged, and keeps neither the server
// from starting nor other files from their import.
func TestSFTPBadJobLeftAlone(t *testing.T) {
	e := newEnv(t)
	for name, content := range map[string]string{"01bad.json": "{not json", "01bad2.json": `{"id": "01bad2", "company_id": "../..", "name": "x.csv"}`} {
		if err := os.WriteFile(filepath.Join(e.cfg.Dir, "queue", name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(e.cfg.Dir, "queue", strings.TrimSuffix(name, ".json")), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	e.restart()
	c := e.mustDial()
	put(t, c, "toclientele/customers.csv", []byte("customer_id,email\nC1,c1@x.test\n"))
	if r := waitResult(t, c, "customers.csv"); r.State != "completed" {
		t.Errorf("result %+v", r)
	}
	if !strings.Contains(e.logs.String(), "job is not valid") {
		t.Error("the bad jobs were not logged")
	}
}

// TestSFTPQueuedFileGone: a queued file that is gone when its import is
// tried again (removed by hand) drops its job, rather than being retried
// for ever.
func TestSFTPQueuedFileGone(t *testing.T) {
	var once sync.Once
	gone := make(chan string)
	e := newEnv(t, with(func(c *sftp.Config) {
		c.RetryMax = time.Second
		c.Uploads = uploadsFunc(func(ctx context.Context, cmd imports.StageUpload) (imports.StagedUpload, error) {
			once.Do(func() { gone <- cmd.RunID })
			return imports.StagedUpload{}, errors.New("the database is away")
		})
	}))
	c := e.mustDial()
	put(t, c, "toclientele/customers.csv", []byte("customer_id,email\nC1,c1@x.test\n"))
	id := <-gone
	if err := os.Remove(filepath.Join(e.cfg.Dir, "queue", id)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the job to be dropped", func() bool {
		entries, err := os.ReadDir(filepath.Join(e.cfg.Dir, "queue"))
		return err == nil && len(entries) == 0
	})
	waitFor(t, "the dropped file to be listed no more", func() bool {
		_, err := c.Stat("toclientele/customers.csv")
		return errors.Is(err, os.ErrNotExist)
	})
}
