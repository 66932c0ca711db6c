package sftp

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	pkgsftp "github.com/pkg/sftp"

	"github.com/clientele/clientele/commands"
	"github.com/clientele/clientele/domain/access"
)

// tree is one company's view, for one logged-in principal: the SFTP
// request handlers. Every path is resolved here against the virtual tree
//
//	/toclientele/              drop files here
//	/toclientele/processed/    imported files and their .result.json
//	/toclientele/failed/       refused files and their .error.txt
//
// and against nothing else: pkg/sftp cleans paths lexically within "/"
// first, so ".." never leaves it, and a path that is not one of these
// shapes does not exist. Links are refused, and the directories hold
// none (only this server writes them).
type tree struct {
	s    *Server
	p    access.Principal
	cred credential
	log  *slog.Logger
	// closeConn closes the connection; end calls it once.
	closeConn func()
	endOnce   sync.Once
}

func (t *tree) handlers() pkgsftp.Handlers {
	return pkgsftp.Handlers{FileGet: t, FilePut: t, FileCmd: t, FileList: t}
}

var (
	errBadName  = fmt.Errorf("invalid file name: %w", pkgsftp.ErrSSHFxPermissionDenied)
	errReadOnly = fmt.Errorf("processed/ and failed/ are written by the server; drop files in /toclientele/: %w", pkgsftp.ErrSSHFxPermissionDenied)
	errNoLinks  = fmt.Errorf("links are not supported: %w", pkgsftp.ErrSSHFxPermissionDenied)
	errNoDirs   = fmt.Errorf("the directories are fixed: /toclientele/, its processed/ and failed/: %w", pkgsftp.ErrSSHFxPermissionDenied)
)

// place is a resolved path: the root, a directory of the tree (sub ""
// for toclientele itself), or a file in one.
type place struct {
	root bool
	sub  string // "", processedDir or failedDir
	name string // "" for the directory itself
}

// hidePaths replaces the server's paths in a file system error by the
// client's path p: the client is told what failed, and why (the error
// number), but not where the server keeps its files.
func hidePaths(err error, p string) error {
	var pe *fs.PathError
	var le *os.LinkError
	switch {
	case errors.As(err, &pe):
		return &fs.PathError{Op: pe.Op, Path: p, Err: pe.Err}
	case errors.As(err, &le):
		return &fs.PathError{Op: le.Op, Path: p, Err: le.Err}
	}
	return err
}

func notExist(p string) error { return &os.PathError{Op: "stat", Path: p, Err: os.ErrNotExist} }

// resolve maps a cleaned absolute path to its place in the tree.
func resolve(p string) (place, error) {
	p = path.Clean("/" + p)
	if p == "/" {
		return place{root: true}, nil
	}
	parts := strings.Split(strings.TrimPrefix(p, "/"), "/")
	if parts[0] != dropDir || len(parts) > 3 {
		return place{}, notExist(p)
	}
	switch len(parts) {
	case 1:
		return place{}, nil
	case 2:
		if parts[1] == processedDir || parts[1] == failedDir {
			return place{sub: parts[1]}, nil
		}
		if err := validName(parts[1]); err != nil {
			return place{}, err
		}
		return place{name: parts[1]}, nil
	}
	if parts[1] != processedDir && parts[1] != failedDir {
		return place{}, notExist(p)
	}
	if err := validName(parts[2]); err != nil {
		return place{}, err
	}
	return place{sub: parts[1], name: parts[2]}, nil
}

func (pl place) isDir() bool { return pl.name == "" }

// disk returns the place's path on disk.
func (t *tree) disk(pl place) (string, error) {
	d, err := t.s.store.drop(t.p.CompanyID)
	if err != nil {
		return "", err
	}
	return filepath.Join(d, pl.sub, pl.name), nil
}

// Fileread opens a file for download: a held file of toclientele/, or
// any file of processed/ and failed/.
func (t *tree) Fileread(r *pkgsftp.Request) (_ io.ReaderAt, err error) {
	defer func() { err = hidePaths(err, r.Filepath) }()
	pl, err := resolve(r.Filepath)
	if err != nil {
		return nil, err
	}
	if pl.root || pl.isDir() {
		return nil, fmt.Errorf("%s is a directory: %w", r.Filepath, pkgsftp.ErrSSHFxFailure)
	}
	if err := t.check(); err != nil {
		return nil, err
	}
	p, err := t.disk(pl)
	if err != nil {
		return nil, err
	}
	if fi, err := os.Lstat(p); err != nil || !fi.Mode().IsRegular() {
		return nil, notExist(r.Filepath)
	}
	if err := t.takeFile(); err != nil {
		return nil, err
	}
	f, err := os.Open(p)
	if err != nil {
		t.giveFile()
		return nil, err
	}
	return &download{f: f, name: r.Filepath, t: t}, nil
}

// takeFile counts one more open file of the company against
// Config.MaxOpenFilesPerCompany, or refuses it.
func (t *tree) takeFile() error {
	if !t.s.held.take(keyFiles(t.p.CompanyID), t.s.cfg.MaxOpenFilesPerCompany) {
		return fmt.Errorf("too many files open at once (%d); close some first: %w", t.s.cfg.MaxOpenFilesPerCompany, pkgsftp.ErrSSHFxFailure)
	}
	return nil
}

func (t *tree) giveFile() { t.s.held.give(keyFiles(t.p.CompanyID)) }

// download is a file opened for reading; closing it gives its slot back.
type download struct {
	f    *os.File
	name string // as the client named it
	t    *tree
	once sync.Once
}

func (d *download) ReadAt(p []byte, off int64) (int, error) {
	n, err := d.f.ReadAt(p, off)
	return n, hidePaths(err, d.name)
}

func (d *download) Close() error {
	err := d.f.Close()
	d.once.Do(d.t.giveFile)
	return err
}

// Filewrite starts an upload into toclientele/. The entity's upload scope
// is checked now when the name says what the file holds, so a token may
// not even send what it may not import; a file with a final name that
// says nothing goes to failed/ once complete, saying why.
func (t *tree) Filewrite(r *pkgsftp.Request) (_ io.WriterAt, err error) {
	defer func() { err = hidePaths(err, r.Filepath) }()
	pl, err := resolve(r.Filepath)
	if err != nil {
		return nil, err
	}
	switch {
	case pl.root || pl.isDir():
		return nil, fmt.Errorf("%s is a directory: %w", r.Filepath, pkgsftp.ErrSSHFxFailure)
	case pl.sub != "":
		return nil, errReadOnly
	case r.Pflags().Append:
		return nil, fmt.Errorf("appending to a file is not supported; send the whole file: %w", pkgsftp.ErrSSHFxOpUnsupported)
	}
	if err := t.check(); err != nil {
		return nil, err
	}
	if !ignored(pl.name) {
		if k, err := kindOf(pl.name); err == nil && !mayUpload(t.p, k.entity) {
			return nil, fmt.Errorf("this access token's scopes do not allow uploading %s (POST %s): %w", k.entity, uploadPath(k.entity), pkgsftp.ErrSSHFxPermissionDenied)
		}
	}
	return t.newUpload(pl.name)
}

// Filecmd serves rename, remove and setstat; directories and links are
// fixed and refused.
func (t *tree) Filecmd(r *pkgsftp.Request) (err error) {
	defer func() { err = hidePaths(err, r.Filepath) }()
	if err := t.check(); err != nil {
		return err
	}
	switch r.Method {
	case "Rename":
		return t.rename(r, false)
	case "PosixRename":
		return t.rename(r, true)
	case "Remove":
		return t.remove(r)
	case "Setstat":
		// Clients set times and modes after an upload (put -p); the tree
		// keeps its own. Accepted for what exists, so that they go on.
		_, err := t.stat(r.Filepath)
		return err
	case "Link", "Symlink":
		return errNoLinks
	case "Mkdir", "Rmdir":
		return errNoDirs
	}
	return pkgsftp.ErrSSHFxOpUnsupported
}

// PosixRename implements pkgsftp.PosixRenameFileCmder: OpenSSH's rename,
// which replaces an existing target.
func (t *tree) PosixRename(r *pkgsftp.Request) error {
	if err := t.check(); err != nil {
		return err
	}
	return hidePaths(t.rename(r, true), r.Filepath)
}

// rename renames a held file of toclientele/. To a final name, it is
// queued for import as if it had just been uploaded complete (the
// upload-then-rename of careful clients); to another ignored name it is
// only renamed. Files being uploaded or imported, and those of
// processed/ and failed/, are not renamed.
func (t *tree) rename(r *pkgsftp.Request, replace bool) error {
	from, err := resolve(r.Filepath)
	if err != nil {
		return err
	}
	to, err := resolve(r.Target)
	if err != nil {
		return err
	}
	if from.root || from.isDir() || to.root || to.isDir() {
		return errNoDirs
	}
	if from.sub != "" || to.sub != "" {
		return errReadOnly
	}
	src, err := t.disk(from)
	if err != nil {
		return err
	}
	fi, err := os.Lstat(src)
	if err != nil || !fi.Mode().IsRegular() {
		if t.busy(from.name) {
			return fmt.Errorf("%s is being uploaded or imported: %w", from.name, pkgsftp.ErrSSHFxFailure)
		}
		return notExist(r.Filepath)
	}
	if ignored(to.name) {
		dst, err := t.disk(to)
		if err != nil {
			return err
		}
		if !replace {
			if _, err := os.Lstat(dst); err == nil {
				return fmt.Errorf("%s exists: %w", to.name, pkgsftp.ErrSSHFxFailure)
			}
		}
		return os.Rename(src, dst)
	}
	if k, err := kindOf(to.name); err == nil && !mayUpload(t.p, k.entity) {
		return fmt.Errorf("this access token's scopes do not allow uploading %s (POST %s): %w", k.entity, uploadPath(k.entity), pkgsftp.ErrSSHFxPermissionDenied)
	}
	j := job{ID: commands.NewID(), CompanyID: t.p.CompanyID, Name: to.name, Principal: t.p, KeyFingerprint: t.cred.fingerprint,
		Size: fi.Size(), ReceivedAt: time.Now().UTC()}
	if fi.Size() > t.s.cfg.MaxFileBytes {
		j.Refused = fmt.Sprintf("%q is over the size limit of %d bytes", to.name, t.s.cfg.MaxFileBytes)
	}
	if err := t.s.queue.add(j, src); err != nil {
		return err
	}
	t.log.Info("sftp: file renamed to a final name", "from", from.name, "file", to.name, "run_id", j.ID)
	return nil
}

// remove deletes a held file of toclientele/ (one not yet imported), or
// a file of processed/ or failed/ (the company's to tidy). A file being
// uploaded or imported cannot be removed: its import has begun.
func (t *tree) remove(r *pkgsftp.Request) error {
	pl, err := resolve(r.Filepath)
	if err != nil {
		return err
	}
	if pl.root || pl.isDir() {
		return errNoDirs
	}
	p, err := t.disk(pl)
	if err != nil {
		return err
	}
	fi, err := os.Lstat(p)
	if err != nil || !fi.Mode().IsRegular() {
		if pl.sub == "" && t.busy(pl.name) {
			return fmt.Errorf("%s is being uploaded or imported and cannot be removed: %w", pl.name, pkgsftp.ErrSSHFxFailure)
		}
		return notExist(r.Filepath)
	}
	return os.Remove(p)
}

// busy reports whether a file of that name is being uploaded or is queued.
func (t *tree) busy(name string) bool {
	for _, u := range t.s.uploads.of(t.p.CompanyID) {
		if u.name == name {
			return true
		}
	}
	for _, j := range t.s.queue.of(t.p.CompanyID) {
		if j.Name == name {
			return true
		}
	}
	return false
}

// Filelist serves directory listings and stat.
func (t *tree) Filelist(r *pkgsftp.Request) (_ pkgsftp.ListerAt, err error) {
	defer func() { err = hidePaths(err, r.Filepath) }()
	switch r.Method {
	case "List":
		fis, err := t.list(r.Filepath)
		return listerAt(fis), err
	case "Stat":
		fi, err := t.stat(r.Filepath)
		if err != nil {
			return nil, err
		}
		return listerAt{fi}, nil
	case "Readlink":
		return nil, errNoLinks
	}
	return nil, pkgsftp.ErrSSHFxOpUnsupported
}

// list returns a directory's entries: for toclientele/, its two
// directories, the held files, and the files being uploaded or waiting
// for their import (shown so that a client sees its upload arrived).
func (t *tree) list(p string) ([]os.FileInfo, error) {
	pl, err := resolve(p)
	if err != nil {
		return nil, err
	}
	if pl.root {
		return []os.FileInfo{dirInfo(dropDir)}, nil
	}
	if !pl.isDir() {
		fi, err := t.stat(p)
		if err != nil {
			return nil, err
		}
		return []os.FileInfo{fi}, nil
	}
	d, err := t.disk(pl)
	if err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(d)
	if err != nil {
		return nil, err
	}
	var out []os.FileInfo
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), tempPrefix) {
			continue // a result being written
		}
		fi, err := e.Info()
		if err != nil || !(fi.Mode().IsRegular() || fi.IsDir()) {
			continue
		}
		out = append(out, info(fi))
	}
	if pl.sub == "" {
		for _, u := range t.s.uploads.of(t.p.CompanyID) {
			out = append(out, fileInfo{name: u.name, size: u.Size(), mode: 0o600, mtime: time.Now()})
		}
		for _, j := range t.s.queue.of(t.p.CompanyID) {
			out = append(out, fileInfo{name: j.Name, size: j.Size, mode: 0o400, mtime: j.ReceivedAt})
		}
	}
	slices.SortFunc(out, func(a, b os.FileInfo) int { return strings.Compare(a.Name(), b.Name()) })
	return out, nil
}

// stat describes one path.
func (t *tree) stat(p string) (os.FileInfo, error) {
	pl, err := resolve(p)
	if err != nil {
		return nil, err
	}
	switch {
	case pl.root:
		return dirInfo("/"), nil
	case pl.isDir():
		if pl.sub == "" {
			return dirInfo(dropDir), nil
		}
		return dirInfo(pl.sub), nil
	}
	d, err := t.disk(pl)
	if err != nil {
		return nil, err
	}
	if fi, err := os.Lstat(d); err == nil && fi.Mode().IsRegular() {
		return info(fi), nil
	}
	if pl.sub == "" {
		for _, u := range t.s.uploads.of(t.p.CompanyID) {
			if u.name == pl.name {
				return fileInfo{name: u.name, size: u.Size(), mode: 0o600, mtime: time.Now()}, nil
			}
		}
		for _, j := range t.s.queue.of(t.p.CompanyID) {
			if j.Name == pl.name {
				return fileInfo{name: j.Name, size: j.Size, mode: 0o400, mtime: j.ReceivedAt}, nil
			}
		}
	}
	return nil, notExist(p)
}

// fileInfo is an entry of the tree; its owner is nobody in particular.
type fileInfo struct {
	name  string
	size  int64
	mode  fs.FileMode
	mtime time.Time
}

func (f fileInfo) Name() string       { return f.name }
func (f fileInfo) Size() int64        { return f.size }
func (f fileInfo) Mode() fs.FileMode  { return f.mode }
func (f fileInfo) ModTime() time.Time { return f.mtime }
func (f fileInfo) IsDir() bool        { return f.mode.IsDir() }
func (f fileInfo) Sys() any           { return nil }

func dirInfo(name string) fileInfo {
	return fileInfo{name: name, mode: fs.ModeDir | 0o700, mtime: time.Now()}
}

// info hides the disk's owner and permissions.
func info(fi os.FileInfo) fileInfo {
	mode := fs.FileMode(0o600)
	if fi.IsDir() {
		mode = fs.ModeDir | 0o700
	}
	return fileInfo{name: fi.Name(), size: fi.Size(), mode: mode, mtime: fi.ModTime()}
}

// listerAt serves a listing from a slice.
type listerAt []os.FileInfo

func (l listerAt) ListAt(out []os.FileInfo, off int64) (int, error) {
	if off >= int64(len(l)) {
		return 0, io.EOF
	}
	n := copy(out, l[off:])
	if n < len(out) {
		return n, io.EOF
	}
	return n, nil
}
