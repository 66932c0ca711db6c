package sftp

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	pkgsftp "github.com/pkg/sftp"

	"github.com/clientele/clientele/commands"
)

// upload is a file being written: its writes land in incoming/<id> at
// their offsets, in any order and concurrently (os.File.WriteAt is safe
// for that), so memory holds no more than the packets in flight. What
// happens to it is decided when it is closed.
type upload struct {
	t    *tree
	id   string
	name string
	f    *os.File
	// start is when it was opened, for the log.
	start time.Time

	mu       sync.Mutex
	size     int64 // end of the furthest write
	tooLarge bool
	broken   error // a write that failed: the file is not what was sent
	aborted  error // the connection ended with the file open
}

func (t *tree) newUpload(name string) (*upload, error) {
	if free, err := t.s.store.free(); err != nil {
		return nil, err
	} else if free < t.s.cfg.MinFreeBytes {
		t.log.Error("sftp: upload refused: the disk is full", "free_bytes", free, "min_free_bytes", t.s.cfg.MinFreeBytes)
		return nil, fmt.Errorf("the server's disk is full; try again later: %w", pkgsftp.ErrSSHFxFailure)
	}
	if err := t.takeFile(); err != nil {
		return nil, err
	}
	id := commands.NewID()
	f, err := os.OpenFile(t.s.store.incoming(id), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		t.giveFile()
		return nil, fmt.Errorf("sftp: %w", err)
	}
	u := &upload{t: t, id: id, name: name, f: f, start: time.Now()}
	t.s.uploads.add(t.p.CompanyID, u)
	return u, nil
}

// WriteAt writes p at off, unless the file would grow past the size
// limit: that write fails, and so does every later one, and the file
// will go to failed/. The offset counts, written or not (a file with a
// hole is as large as its end), and is compared without overflowing: the
// protocol's offsets are unsigned 64-bit, so off may be anything.
func (u *upload) WriteAt(p []byte, off int64) (int, error) {
	limit := u.t.s.cfg.MaxFileBytes
	u.mu.Lock()
	if off < 0 || off > limit-int64(len(p)) {
		u.tooLarge = true
	}
	if u.tooLarge {
		u.mu.Unlock()
		return 0, fmt.Errorf("%s is over the size limit of %d bytes", u.name, limit)
	}
	u.mu.Unlock()
	n, err := u.f.WriteAt(p, off)
	u.mu.Lock()
	defer u.mu.Unlock()
	if end := off + int64(n); end > u.size {
		u.size = end
	}
	if err != nil && u.broken == nil {
		u.broken = err
	}
	return n, hidePaths(err, u.name)
}

// TransferError is called by the SFTP server when the connection ends
// with the file still open: an upload cut short, which imports nothing.
func (u *upload) TransferError(err error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if err == nil {
		err = errors.New("connection lost")
	}
	u.aborted = err
}

// Size is how far the file has been written, for listings.
func (u *upload) Size() int64 {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.size
}

// Close ends the upload. A file closed by its writer is complete: it is
// synced, then held under an ignored name, or queued for import under a
// final one (store.enqueue), which Close waits for, so that a client
// told its upload succeeded may rely on it. A file left open by a lost
// connection, or that a write failed, is deleted.
func (u *upload) Close() (err error) {
	defer func() {
		if err != nil {
			u.t.log.Error("sftp: upload failed on close", "file", u.name, "err", err)
		}
		err = hidePaths(err, u.name)
	}()
	defer u.t.giveFile()
	defer u.t.s.uploads.remove(u.t.p.CompanyID, u)
	u.mu.Lock()
	aborted, broken, tooLarge, size := u.aborted, u.broken, u.tooLarge, u.size
	u.mu.Unlock()
	path := u.t.s.store.incoming(u.id)
	log := u.t.log.With("file", u.name, "bytes", size)
	if aborted != nil || broken != nil {
		u.f.Close()
		os.Remove(path)
		log.Warn("sftp: upload cut short; nothing is imported", "err", errors.Join(aborted, broken))
		return nil
	}
	if err := errors.Join(u.f.Sync(), u.f.Close()); err != nil {
		os.Remove(path)
		return fmt.Errorf("sftp: %s: %w", u.name, err)
	}
	// The credential is checked once every byte is in: a file completed
	// after its credential was revoked is not kept, held or queued, and
	// the connection is closed (tree.check).
	if err := u.t.check(); err != nil {
		os.Remove(path)
		log.Warn("sftp: upload completed after its credential was revoked, or unchecked; deleted, nothing is imported")
		return err
	}
	if ignored(u.name) && !tooLarge {
		// Held until renamed: no import, no durability promise beyond the
		// file system's.
		dir, err := u.t.s.store.drop(u.t.p.CompanyID)
		if err != nil {
			return err
		}
		if err := os.Rename(path, filepath.Join(dir, u.name)); err != nil {
			os.Remove(path)
			return fmt.Errorf("sftp: %s: %w", u.name, err)
		}
		log.Info("sftp: file held until renamed")
		return nil
	}
	j := job{ID: u.id, CompanyID: u.t.p.CompanyID, Name: u.name, Principal: u.t.p, KeyFingerprint: u.t.cred.fingerprint,
		Size: size, ReceivedAt: time.Now().UTC()}
	if tooLarge {
		j.Refused = fmt.Sprintf("%q is over the size limit of %d bytes; the part received is kept here. Split the file, or compress it (.gz).", u.name, u.t.s.cfg.MaxFileBytes)
	}
	if err := u.t.s.queue.add(j, path); err != nil {
		os.Remove(path)
		return err
	}
	log.Info("sftp: file received", "run_id", j.ID, "seconds", time.Since(u.start).Seconds())
	return nil
}

// uploads are the uploads in progress, by company, for listings.
type uploads struct {
	mu sync.Mutex
	m  map[string]map[*upload]struct{}
}

func (us *uploads) add(companyID string, u *upload) {
	us.mu.Lock()
	defer us.mu.Unlock()
	if us.m == nil {
		us.m = map[string]map[*upload]struct{}{}
	}
	if us.m[companyID] == nil {
		us.m[companyID] = map[*upload]struct{}{}
	}
	us.m[companyID][u] = struct{}{}
}

func (us *uploads) remove(companyID string, u *upload) {
	us.mu.Lock()
	defer us.mu.Unlock()
	delete(us.m[companyID], u)
}

// of returns the company's uploads in progress.
func (us *uploads) of(companyID string) []*upload {
	us.mu.Lock()
	defer us.mu.Unlock()
	out := make([]*upload, 0, len(us.m[companyID]))
	for u := range us.m[companyID] {
		out = append(out, u)
	}
	return out
}
