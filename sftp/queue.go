package sftp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/clientele/clientele/commands"
	"github.com/clientele/clientele/commands/imports"
	"github.com/clientele/clientele/domain"
	"github.com/clientele/clientele/domain/importing"
	"github.com/clientele/clientele/internal/bus"
)

// queue imports the complete files one at a time, the companies taking
// turns (a bus.Resumer keyed by company), each company's files in the
// order they were completed (ids are UUIDv7, ordered by time), so that a
// company's files are scheduled in the order it sent them, as its HTTP
// uploads are.
type queue struct {
	s       *Server
	resumer *bus.Resumer

	mu   sync.Mutex
	jobs []job // waiting or in progress, oldest first

	// filesMu orders the writes of processed/ and failed/: the worker's
	// choice of a name and its first result, against the rewrite of a
	// result by watchResults.
	filesMu sync.Mutex

	// pending are the runs whose result files still show them unfinished.
	pendingMu sync.Mutex
	pending   map[string]resultFile
}

// resultFile is a result file to rewrite once its run finishes.
type resultFile struct {
	companyID, path, name string
}

// retryMin is the wait before a company's file is staged again after its
// first failure; each failure in a row doubles it, up to Config.RetryMax.
const retryMin = 500 * time.Millisecond

// newQueue returns the import queue of s; run works it.
func newQueue(s *Server) (*queue, error) {
	q := &queue{s: s, pending: map[string]resultFile{}}
	r, err := bus.NewResumer(bus.ResumerConfig{
		CatchUp:    q.importNext,
		MinBackoff: retryMin, MaxBackoff: s.cfg.RetryMax,
		Failed: q.failed,
	})
	if err != nil {
		return nil, fmt.Errorf("sftp: %w", err)
	}
	q.resumer = r
	return q, nil
}

// add commits a complete file to the queue (store.enqueue) and wakes the
// worker. Once the file is committed it is imported, so it is queued
// even if the sync after the commit failed: the failure is logged, and
// the client told its file arrived (told otherwise, it would send it
// again, to be imported twice).
func (q *queue) add(j job, from string) error {
	committed, err := q.s.store.enqueue(j, from)
	if !committed {
		return err
	}
	if err != nil {
		q.s.log.Error("sftp: a received file is queued, but the queue could not be synced", "company_id", j.CompanyID, "file", j.Name, "run_id", j.ID, "err", err)
	}
	q.mu.Lock()
	q.jobs = append(q.jobs, j)
	q.mu.Unlock()
	q.resumer.Resume(j.CompanyID)
	return nil
}

// of returns the company's queued files, for listings.
func (q *queue) of(companyID string) []job {
	q.mu.Lock()
	defer q.mu.Unlock()
	var out []job
	for _, j := range q.jobs {
		if j.CompanyID == companyID {
			out = append(out, j)
		}
	}
	return out
}

// recover reads what a previous process left: uploads in progress are
// deleted (their clients were never told they succeeded), jobs whose file
// is queued are queued again, and jobs whose file already moved on are
// removed. It also picks up the result files of unfinished runs.
func (q *queue) recover() error {
	st := q.s.store
	in, err := os.ReadDir(filepath.Join(st.dir, "incoming"))
	if err != nil {
		return fmt.Errorf("sftp: %w", err)
	}
	for _, e := range in {
		q.s.log.Warn("sftp: deleting an upload cut short by a stop", "id", e.Name())
		os.Remove(filepath.Join(st.dir, "incoming", e.Name()))
	}
	entries, err := os.ReadDir(filepath.Join(st.dir, "queue"))
	if err != nil {
		return fmt.Errorf("sftp: %w", err)
	}
	removeTemps(filepath.Join(st.dir, "queue"))
	var jobs []job
	for _, e := range entries {
		id, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok {
			continue
		}
		// A job that cannot be read is left where it is, for the
		// operator: it must not keep every other file from its import.
		b, err := os.ReadFile(st.jobFile(id))
		if err != nil {
			q.s.log.Error("sftp: a queued file's job cannot be read; it is left in the queue", "job", st.jobFile(id), "err", err)
			continue
		}
		var j job
		if err := json.Unmarshal(b, &j); err != nil || j.ID != id || !validID(j.CompanyID) || validName(j.Name) != nil {
			q.s.log.Error("sftp: a queued file's job is not valid; it is left in the queue", "job", st.jobFile(id), "err", err)
			continue
		}
		if _, err := os.Stat(st.queued(id)); errors.Is(err, os.ErrNotExist) {
			// Its file moved on (or never came: the rename is the commit).
			if err := st.dequeue(id); err != nil {
				return err
			}
			continue
		}
		jobs = append(jobs, j)
	}
	slices.SortFunc(jobs, func(a, b job) int { return strings.Compare(a.ID, b.ID) })
	if len(jobs) > 0 {
		q.s.log.Info("sftp: resuming the import of files received before a stop", "files", len(jobs))
	}
	q.mu.Lock()
	q.jobs = append(jobs, q.jobs...)
	q.mu.Unlock()
	// The company of the oldest file goes first.
	for _, j := range jobs {
		q.resumer.Resume(j.CompanyID)
	}
	return q.recoverResults()
}

// run imports queued files until ctx ends, one at a time, the companies
// taking turns (bus.Resumer, keyed by company), each company's files in
// order. A file whose staging fails for a reason that may pass (the
// database away) is tried again, with its company's backoff, before any
// later file of its company; the other companies' files go on meanwhile:
// no file stops anything but its own company's queue.
func (q *queue) run(ctx context.Context) {
	q.resumer.Run(ctx)
}

// importNext imports the company's oldest queued file, and reports
// whether the company has more. It is the Resumer's CatchUp.
func (q *queue) importNext(ctx context.Context, companyID string) (more bool, err error) {
	j, ok := q.first(companyID)
	if !ok {
		return false, nil
	}
	if err := q.process(ctx, j); err != nil {
		return false, err
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	q.jobs = slices.DeleteFunc(q.jobs, func(o job) bool { return o.ID == j.ID })
	return slices.ContainsFunc(q.jobs, func(o job) bool { return o.CompanyID == companyID }), nil
}

// first returns the company's oldest queued file.
func (q *queue) first(companyID string) (job, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, j := range q.jobs {
		if j.CompanyID == companyID {
			return j, true
		}
	}
	return job{}, false
}

// failed logs a file whose import failed and is tried again in retryIn.
func (q *queue) failed(_ context.Context, companyID string, err error, retryIn time.Duration) {
	j, _ := q.first(companyID)
	q.s.log.Warn("sftp: import of a file failed; retrying", "company_id", companyID, "file", j.Name, "run_id", j.ID, "err", err, "retry_in", retryIn.String())
}

// process imports one file (importFile). A panic while doing so (a bug,
// which a file's content might trigger every time) is the file's alone:
// it goes to failed/, unless its run was staged already, which is tried
// again. Left to crash the process, it would crash it again at every
// start, the file being queued first.
func (q *queue) process(ctx context.Context, j job) (err error) {
	defer func() {
		v := recover()
		if v == nil {
			return
		}
		q.s.log.Error("sftp: import of a file panicked", "company_id", j.CompanyID, "file", j.Name, "run_id", j.ID,
			"panic", fmt.Sprint(v), "stack", string(debug.Stack()))
		_, rerr := q.s.cfg.Runs.Run(ctx, j.CompanyID, j.ID)
		switch {
		case rerr == nil:
			err = fmt.Errorf("sftp: panic after staging: %v", v)
		case domain.ErrorCode(rerr) != domain.NotFound:
			err = rerr
		default:
			err = q.fail(j, "An internal error stopped its import (it was logged for the operator). Send the file again later; if it fails again, tell the operator.")
		}
	}()
	return q.importFile(ctx, j)
}

// importFile stages one file (unless its run was scheduled already, by a
// process stopped before it could move the file on) and moves it to
// processed/ with its result, or to failed/ with the reason. An error
// leaves the file queued.
func (q *queue) importFile(ctx context.Context, j job) error {
	log := q.s.log.With("company_id", j.CompanyID, "file", j.Name, "run_id", j.ID)
	if _, err := os.Lstat(q.s.store.queued(j.ID)); errors.Is(err, os.ErrNotExist) {
		// Moved on by a process whose removal of the job failed, or
		// removed by hand: there is nothing to import.
		log.Warn("sftp: a queued file is gone; its job is dropped")
		return q.s.store.dequeue(j.ID)
	}
	if j.Refused != "" {
		return q.fail(j, j.Refused)
	}
	_, err := q.s.cfg.Runs.Run(ctx, j.CompanyID, j.ID)
	switch {
	case err == nil:
		log.Info("sftp: file already staged before a stop; moving it on")
		return q.done(ctx, j)
	case domain.ErrorCode(err) != domain.NotFound:
		return err
	}
	// Authority is checked when the import begins: a file whose sender's
	// token was revoked, or key removed, since it arrived is not imported.
	p, err := q.s.authority(ctx, credential{p: j.Principal, fingerprint: j.KeyFingerprint})
	if revoked(err) {
		log.Warn("sftp: the credential of a queued file is gone; it is not imported", "err", domain.ErrorMessage(err))
		return q.fail(j, revokedReason(j))
	}
	if err != nil {
		return err
	}
	j.Principal = p
	k, err := kindOf(j.Name)
	if err != nil {
		return q.fail(j, err.Error())
	}
	if !mayUpload(j.Principal, k.entity) {
		return q.fail(j, fmt.Sprintf("the access token's scopes do not allow uploading %s (POST %s)", k.entity, uploadPath(k.entity)))
	}
	start := time.Now()
	staged, err := q.stage(ctx, j, k)
	if err != nil {
		if fileFault(err) {
			log.Info("sftp: file refused", "err", err)
			return q.fail(j, domain.ErrorMessage(err))
		}
		return err
	}
	log.Info("sftp: file staged", "records", staged.Received, "seconds", time.Since(start).Seconds())
	return q.done(ctx, j)
}

// fileFault reports whether a staging error is the file's fault, which
// staging it again cannot cure: the client's errors (a malformed file,
// one over the size limit).
func fileFault(err error) bool {
	switch domain.ErrorCode(err) {
	case domain.Invalid, domain.Validation, domain.TooLarge, domain.Forbidden, domain.Unauthorized:
		return true
	}
	return false
}

// stage streams the file into StageUpload as run j.ID.
func (q *queue) stage(ctx context.Context, j job, k fileKind) (imports.StagedUpload, error) {
	path := q.s.store.queued(j.ID)
	charset := ""
	if k.format == "csv" {
		utf8, err := isUTF8(path, k.gzip, q.s.cfg.MaxFileBytes)
		if err != nil {
			return imports.StagedUpload{}, err
		}
		if !utf8 {
			// Not UTF-8: a Windows program's file, read as windows-1252
			// (ISO-8859-1's superset), as HTTP uploads with
			// charset=iso-8859-1 are. A byte order mark still wins.
			charset = "iso-8859-1"
		}
	}
	body, err := openBody(path, k.gzip, q.s.cfg.MaxFileBytes)
	if err != nil {
		return imports.StagedUpload{}, err
	}
	defer body.Close()
	return q.s.cfg.Uploads.Handle(commands.WithRequest(ctx, "sftp", j.ID), imports.StageUpload{
		Principal: j.Principal, Entity: k.entity, Format: k.format, Charset: charset,
		Body: body, Source: "sftp", RunID: j.ID,
	})
}

// done moves a staged file to processed/ beside its result file, written
// first: a stop between the two writes it again.
func (q *queue) done(ctx context.Context, j job) error {
	dir, err := q.s.store.drop(j.CompanyID)
	if err != nil {
		return err
	}
	dir = filepath.Join(dir, processedDir)
	q.filesMu.Lock()
	defer q.filesMu.Unlock()
	name := freeName(dir, j.Name, resultSuffix, func(path string) bool {
		b, err := os.ReadFile(path)
		return err == nil && resultRunID(b) == j.ID
	})
	rf := resultFile{companyID: j.CompanyID, path: filepath.Join(dir, name+resultSuffix), name: name}
	b, finished, err := q.result(ctx, j.ID, rf)
	if err != nil {
		return err
	}
	if err := writeFileSync(rf.path, b); err != nil {
		return err
	}
	if err := os.Rename(q.s.store.queued(j.ID), filepath.Join(dir, name)); err != nil {
		return fmt.Errorf("sftp: %w", err)
	}
	if err := syncDir(dir); err != nil {
		return err
	}
	if !finished {
		q.pendingMu.Lock()
		q.pending[j.ID] = rf
		q.pendingMu.Unlock()
	}
	return q.s.store.dequeue(j.ID)
}

// Sidecars: the files beside a processed or failed file.
const (
	resultSuffix = ".result.json"
	errorSuffix  = ".error.txt"
)

// fail moves a file that cannot be imported to failed/ beside
// <name>.error.txt, which says why.
func (q *queue) fail(j job, reason string) error {
	dir, err := q.s.store.drop(j.CompanyID)
	if err != nil {
		return err
	}
	dir = filepath.Join(dir, failedDir)
	q.filesMu.Lock()
	defer q.filesMu.Unlock()
	// The reference tells this file's error text from any other.
	ref := "Reference: " + j.ID + "\n"
	name := freeName(dir, j.Name, errorSuffix, func(path string) bool {
		b, err := os.ReadFile(path)
		return err == nil && strings.HasSuffix(string(b), ref)
	})
	text := fmt.Sprintf("%s was not imported.\n\n%s\n\nReceived: %s (%d bytes). Fix the file and upload it again.\n\n%s",
		j.Name, reason, j.ReceivedAt.Format(time.RFC3339), j.Size, ref)
	if err := writeFileSync(filepath.Join(dir, name+errorSuffix), []byte(text)); err != nil {
		return err
	}
	if err := os.Rename(q.s.store.queued(j.ID), filepath.Join(dir, name)); err != nil {
		return fmt.Errorf("sftp: %w", err)
	}
	if err := syncDir(dir); err != nil {
		return err
	}
	q.s.log.Info("sftp: file moved to failed/", "company_id", j.CompanyID, "file", j.Name, "reason", reason)
	return q.s.store.dequeue(j.ID)
}

// resultJSON is the content of <name>.result.json: the run, as GET
// /api/imports/<run_id>/ shows it, with its first rejections.
type resultJSON struct {
	File       string           `json:"file"`
	RunID      string           `json:"run_id"`
	Entity     importing.Entity `json:"entity"`
	State      importing.State  `json:"state"`
	Received   int64            `json:"received"`
	Accepted   int64            `json:"accepted"`
	Rejected   int64            `json:"rejected"`
	Failure    string           `json:"failure,omitempty"`
	CreatedAt  time.Time        `json:"created_at"`
	FinishedAt *time.Time       `json:"finished_at"`
	Rejections []rejectionJSON  `json:"rejections"`
	// More says where the rest of the rejections are.
	More string `json:"more_rejections,omitempty"`
}

type rejectionJSON struct {
	Index  int    `json:"index"`
	Reason string `json:"reason"`
	Field  string `json:"field,omitempty"`
}

// resultRejections is how many rejections a result file shows.
const resultRejections = 100

// result returns the content of the run's result file and whether the
// run has finished (its result will not change).
func (q *queue) result(ctx context.Context, runID string, rf resultFile) (b []byte, finished bool, err error) {
	run, err := q.s.cfg.Runs.Run(ctx, rf.companyID, runID)
	if err != nil {
		return nil, false, err
	}
	out := resultJSON{
		File: rf.name, RunID: run.ID, Entity: run.Entity, State: run.State,
		Received: run.Received, Accepted: run.Accepted, Rejected: run.Rejected, Failure: run.Failure,
		CreatedAt: run.CreatedAt, FinishedAt: run.FinishedAt, Rejections: []rejectionJSON{},
	}
	finished = run.State == importing.Completed || run.State == importing.Failed
	if finished && run.Rejected > 0 {
		rs, next, err := q.s.cfg.Runs.Rejections(ctx, run.ID, "", resultRejections)
		if err != nil {
			return nil, false, err
		}
		for _, r := range rs {
			out.Rejections = append(out.Rejections, rejectionJSON{Index: r.Index, Reason: r.Reason, Field: r.Field})
		}
		if next != "" {
			out.More = fmt.Sprintf("the first %d rejections are shown; GET /api/imports/%s/ lists them all", resultRejections, run.ID)
		}
	}
	b, err = json.MarshalIndent(out, "", "  ")
	if err != nil {
		return nil, false, err
	}
	return append(b, '\n'), finished, nil
}

// resultRunID returns the run id of a result file's content, or "".
func resultRunID(b []byte) string {
	var r struct {
		RunID string `json:"run_id"`
	}
	if json.Unmarshal(b, &r) != nil {
		return ""
	}
	return r.RunID
}

// watchResults rewrites the result files of unfinished runs once they
// finish, looking every PollInterval. A result file the company removed,
// or that is no longer the run's, is left alone, and so is a run that is
// no more.
func (q *queue) watchResults(ctx context.Context) {
	t := time.NewTicker(q.s.cfg.PollInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		q.pendingMu.Lock()
		pending := make(map[string]resultFile, len(q.pending))
		for id, rf := range q.pending {
			pending[id] = rf
		}
		q.pendingMu.Unlock()
		for id, rf := range pending {
			finished, err := q.rewriteResult(ctx, id, rf)
			if err != nil && domain.ErrorCode(err) != domain.NotFound {
				if ctx.Err() == nil {
					q.s.log.Warn("sftp: result file not updated", "run_id", id, "err", err)
				}
				continue
			}
			if finished || err != nil {
				q.pendingMu.Lock()
				delete(q.pending, id)
				q.pendingMu.Unlock()
			}
		}
	}
}

// rewriteResult rewrites the run's result file, if it is still there and
// the run's, and reports whether it needs no more rewriting.
func (q *queue) rewriteResult(ctx context.Context, runID string, rf resultFile) (done bool, err error) {
	b, finished, err := q.result(ctx, runID, rf)
	if err != nil {
		return false, err
	}
	q.filesMu.Lock()
	defer q.filesMu.Unlock()
	old, err := os.ReadFile(rf.path)
	if err != nil || resultRunID(old) != runID {
		return true, nil
	}
	if bytes.Equal(old, b) {
		return finished, nil // nothing new: no write, no sync
	}
	if err := writeFileSync(rf.path, b); err != nil {
		return false, err
	}
	return finished, nil
}

// recoverResults finds the result files of runs that had not finished
// when the previous process stopped.
func (q *queue) recoverResults() error {
	companies, err := os.ReadDir(filepath.Join(q.s.store.dir, "companies"))
	if err != nil {
		return fmt.Errorf("sftp: %w", err)
	}
	for _, c := range companies {
		dir := filepath.Join(q.s.store.dir, "companies", c.Name(), dropDir, processedDir)
		removeTemps(dir)
		removeTemps(filepath.Join(q.s.store.dir, "companies", c.Name(), dropDir, failedDir))
		files, err := filepath.Glob(filepath.Join(dir, "*"+resultSuffix))
		if err != nil {
			return err
		}
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				continue
			}
			var r resultJSON
			if json.Unmarshal(b, &r) != nil || r.RunID == "" {
				continue
			}
			if r.State != importing.Completed && r.State != importing.Failed {
				q.pendingMu.Lock()
				q.pending[r.RunID] = resultFile{companyID: c.Name(), path: f, name: r.File}
				q.pendingMu.Unlock()
			}
		}
	}
	return nil
}

// revokedReason is the error text of a file whose sender's credential
// was revoked before its import began.
func revokedReason(j job) string {
	what := "access token"
	if j.Principal.SFTPKeyID != "" {
		what = "SFTP key"
	}
	return fmt.Sprintf("The %s it was sent with was revoked (or removed) before its import began: nothing of it was imported. Upload it again, logged in with a valid access token or key.", what)
}
