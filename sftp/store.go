package sftp

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/clientele/clientele/domain/access"
)

// store is the directory the server keeps files in (Config.Dir):
//
//	lock                      held (flock) by the one server using the directory
//	incoming/<id>             uploads in progress; deleted on start
//	queue/<id>.json           a complete file's job: company, name, sender
//	queue/<id>                the complete file, to be imported as run <id>
//	companies/<company id>/toclientele/            files held under ignored names
//	companies/<company id>/toclientele/processed/  imported files, <name>.result.json
//	companies/<company id>/toclientele/failed/     refused files, <name>.error.txt
type store struct {
	dir  string
	lock *os.File
}

func openStore(dir string) (*store, error) {
	for _, d := range []string{"incoming", "queue", "companies"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o700); err != nil {
			return nil, fmt.Errorf("sftp: %w", err)
		}
	}
	f, err := os.OpenFile(filepath.Join(dir, "lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("sftp: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, fmt.Errorf("sftp: %s is used by another SFTP server (%w): give each its own directory", dir, err)
	}
	return &store{dir: dir, lock: f}, nil
}

func (st *store) close() error { return st.lock.Close() }

func (st *store) incoming(id string) string { return filepath.Join(st.dir, "incoming", id) }
func (st *store) queued(id string) string   { return filepath.Join(st.dir, "queue", id) }
func (st *store) jobFile(id string) string  { return filepath.Join(st.dir, "queue", id+".json") }

// free returns the bytes free for an unprivileged user on the store's
// file system.
func (st *store) free() (int64, error) {
	var fs syscall.Statfs_t
	if err := syscall.Statfs(st.dir, &fs); err != nil {
		return 0, fmt.Errorf("sftp: %w", err)
	}
	return int64(fs.Bavail) * int64(fs.Bsize), nil
}

// Tree directories of a company.
const (
	dropDir      = "toclientele"
	processedDir = "processed"
	failedDir    = "failed"
)

// drop returns the company's toclientele directory, creating it and its
// subdirectories on first use.
func (st *store) drop(companyID string) (string, error) {
	d := filepath.Join(st.dir, "companies", companyID, dropDir)
	for _, sub := range []string{processedDir, failedDir} {
		if err := os.MkdirAll(filepath.Join(d, sub), 0o700); err != nil {
			return "", fmt.Errorf("sftp: %w", err)
		}
	}
	return d, nil
}

// job is a complete file to import, recorded in queue/<id>.json before
// the file itself is renamed to queue/<id>.
type job struct {
	// ID is the file's id and its run's.
	ID        string `json:"id"`
	CompanyID string `json:"company_id"`
	// Name is the file's name in toclientele/.
	Name string `json:"name"`
	// Principal is who sent the file: the run is theirs.
	Principal access.Principal `json:"principal"`
	// KeyFingerprint is the fingerprint of the key the sender logged in
	// with, if it did with one: its import checks the key is still
	// registered (Server.authority).
	KeyFingerprint string    `json:"key_fingerprint,omitempty"`
	Size           int64     `json:"size"`
	ReceivedAt     time.Time `json:"received_at"`
	// Refused, when set, says why the file cannot be imported although
	// it arrived (over the size limit): it goes to failed/ unstaged.
	Refused string `json:"refused,omitempty"`
}

// enqueue commits a complete file at from as job j: the job is written and
// synced first, then the file is renamed into the queue and the queue
// directory synced. The rename is the commit: from then on the file is
// imported, as run j.ID, exactly once. committed reports whether it
// happened, even when err (the sync after it) says it may not last.
func (st *store) enqueue(j job, from string) (committed bool, err error) {
	b, err := json.Marshal(j)
	if err != nil {
		return false, err
	}
	if err := writeFileSync(st.jobFile(j.ID), b); err != nil {
		return false, err
	}
	if err := os.Rename(from, st.queued(j.ID)); err != nil {
		os.Remove(st.jobFile(j.ID))
		return false, fmt.Errorf("sftp: queue %s: %w", j.Name, err)
	}
	return true, syncDir(filepath.Join(st.dir, "queue"))
}

// dequeue removes a job whose file has moved on.
func (st *store) dequeue(id string) error {
	if err := os.Remove(st.jobFile(id)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return syncDir(filepath.Join(st.dir, "queue"))
}

// tempPrefix starts the names of the files writeFileSync writes before
// renaming them. No client's file can be named so (validName refuses a
// backslash), so a temporary file is never taken for one of theirs, nor
// replaces one, and listings leave it out.
const tempPrefix = ".tmp\\"

// writeFileSync writes b to path through a temporary file of its
// directory and a rename, synced: a reader finds the old content or the
// new, never a part.
func writeFileSync(path string, b []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), tempPrefix+"*")
	if err != nil {
		return fmt.Errorf("sftp: %w", err)
	}
	_, err = f.Write(b)
	if err = errors.Join(err, f.Sync(), f.Close()); err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("sftp: %w", err)
	}
	return syncDir(filepath.Dir(path))
}

// removeTemps deletes the temporary files a stopped process left in dir.
func removeTemps(dir string) {
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), tempPrefix) {
			os.Remove(filepath.Join(dir, e.Name()))
		}
	}
}

// syncDir makes the renames and creations in dir durable (a variable so
// that a test can make it fail).
var syncDir = syncDirFS

func syncDirFS(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("sftp: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sftp: sync %s: %w", dir, err)
	}
	return nil
}

// freeName returns name, or name with ".2", ".3", ... before its
// extension, whichever is free in dir: a file sent twice keeps both
// copies and both results. A name is free when neither it nor its
// sidecar (name+sidecar: its result or error file) is taken by another
// file, whichever that is: a file sent as "customers.csv.result.json"
// must not be overwritten by the result of "customers.csv", nor a result
// be rewritten for another run. A sidecar for which mine holds is the
// caller's own, left by a process stopped before it moved the file
// beside it.
func freeName(dir, name, sidecar string, mine func(path string) bool) string {
	stem, ext := splitExt(name)
	for n := 1; ; n++ {
		cand := name
		if n > 1 {
			cand = stem + "." + strconv.Itoa(n) + ext
		}
		if exists(filepath.Join(dir, cand)) {
			continue
		}
		if sc := filepath.Join(dir, cand+sidecar); !exists(sc) || mine(sc) {
			return cand
		}
	}
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return !errors.Is(err, os.ErrNotExist)
}

// splitExt splits a name before its import extension (".csv.gz", ".json",
// ...), or else its last extension.
func splitExt(name string) (stem, ext string) {
	l := strings.ToLower(name)
	for _, e := range []string{".csv.gz", ".json.gz", ".csv", ".json", ".gz"} {
		if strings.HasSuffix(l, e) && len(name) > len(e) {
			return name[:len(name)-len(e)], name[len(name)-len(e):]
		}
	}
	ext = filepath.Ext(name)
	if ext == name {
		ext = ""
	}
	return name[:len(name)-len(ext)], ext
}
