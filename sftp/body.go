package sftp

import (
	"bufio"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"unicode/utf8"

	"github.com/clientele/clientele/domain"
)

// body is a queued file as its records are read: streamed from the disk,
// uncompressed on the fly for .gz files, and never more than the size
// limit once uncompressed (a small .gz can hold a huge file).
type body struct {
	io.Reader
	f *os.File
}

func (b *body) Close() error { return b.f.Close() }

// openBody opens the file at path for staging.
func openBody(path string, gz bool, limit int64) (*body, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("sftp: %w", err)
	}
	var r io.Reader = bufio.NewReaderSize(&fileReader{f}, 256<<10)
	if gz {
		zr, err := gzip.NewReader(r)
		if err != nil {
			f.Close()
			return nil, gzipError(err)
		}
		r = &gzipReader{zr}
	}
	return &body{Reader: &limitReader{r: r, left: limit, limit: limit}, f: f}, nil
}

// errFile marks the errors of reading the file itself (the server's
// disk), which are not the file's fault.
var errFile = errors.New("reading the file")

type fileReader struct{ f *os.File }

func (r *fileReader) Read(p []byte) (int, error) {
	n, err := r.f.Read(p)
	if err != nil && err != io.EOF {
		err = fmt.Errorf("%w: %w", errFile, err)
	}
	return n, err
}

// gzipReader turns what the gzip reader finds wrong with the data into a
// client error: the file is refused, not retried.
type gzipReader struct{ zr *gzip.Reader }

func (r *gzipReader) Read(p []byte) (int, error) {
	n, err := r.zr.Read(p)
	if err != nil && err != io.EOF && !errors.Is(err, errFile) {
		err = gzipError(err)
	}
	return n, err
}

func gzipError(err error) error {
	if errors.Is(err, errFile) {
		return err
	}
	// The library's words ("gzip: invalid header", "flate: corrupt
	// input") are not the client's.
	reason := "it is corrupt"
	switch {
	case errors.Is(err, gzip.ErrHeader):
		reason = "it does not start with a gzip header"
	case errors.Is(err, gzip.ErrChecksum):
		reason = "its checksum does not match its contents"
	case errors.Is(err, io.ErrUnexpectedEOF):
		reason = "it ends before its compressed data does"
	}
	return domain.Errorf(domain.Invalid, "the file is not valid gzip: %s", reason)
}

// limitReader fails once more than limit bytes were read.
type limitReader struct {
	r           io.Reader
	left, limit int64
}

func (l *limitReader) Read(p []byte) (int, error) {
	if l.left <= 0 {
		// Is there more? One byte tells.
		var one [1]byte
		if n, _ := l.r.Read(one[:]); n > 0 {
			return 0, domain.Errorf(domain.TooLarge, "the file is over the size limit of %d bytes once uncompressed", l.limit)
		}
		return l.r.Read(p[:0])
	}
	if int64(len(p)) > l.left {
		p = p[:l.left]
	}
	n, err := l.r.Read(p)
	l.left -= int64(n)
	return n, err
}

// isUTF8 reports whether the file (uncompressed) is valid UTF-8 from end
// to end: files sent by SFTP carry no charset, so a CSV file that is not
// UTF-8 is taken to be windows-1252. It reads the file once, in blocks.
func isUTF8(path string, gz bool, limit int64) (bool, error) {
	b, err := openBody(path, gz, limit)
	if err != nil {
		return false, err
	}
	defer b.Close()
	buf := make([]byte, 256<<10)
	carry := 0 // bytes of a rune cut by the block's end, moved to the front
	for {
		n, err := b.Read(buf[carry:])
		n += carry
		data := buf[:n]
		// Leave the last, possibly incomplete, rune for the next block.
		end := len(data)
		for i := 1; i <= utf8.UTFMax-1 && i <= len(data); i++ {
			c := data[len(data)-i]
			if c < 0x80 {
				break
			}
			if utf8.RuneStart(c) {
				if !utf8.FullRune(data[len(data)-i:]) {
					end = len(data) - i
				}
				break
			}
		}
		if err == io.EOF {
			return utf8.Valid(data), nil
		}
		if err != nil {
			return false, err
		}
		if !utf8.Valid(data[:end]) {
			return false, nil
		}
		carry = copy(buf, data[end:])
	}
}
