// Package ingesttest generates uploads for tests of the import pipeline.
package ingesttest

import (
	"fmt"
	"io"
	"strings"
)

// Upload returns a JSON upload of n records, {"id": "r<i>", "pad": "..."},
// each about size bytes, generated as it is read: a test can send
// gigabytes without holding them. Record i has id "r<i>".
func Upload(n, size int) io.Reader {
	return &upload{n: n, pad: strings.Repeat("x", max(size-24, 1))}
}

type upload struct {
	n, i           int
	pad            string
	back, buf      []byte // buf: what is left of back to read
	started, ended bool
}

func (u *upload) Read(p []byte) (int, error) {
	for len(u.buf) == 0 {
		b := u.back[:0]
		switch {
		case !u.started:
			b, u.started = append(b, '['), true
		case u.i < u.n:
			if u.i > 0 {
				b = append(b, ',')
			}
			b = fmt.Appendf(b, `{"id":"r%d","pad":"%s"}`, u.i, u.pad)
			u.i++
		case !u.ended:
			b, u.ended = append(b, ']'), true
		default:
			return 0, io.EOF
		}
		u.back, u.buf = b, b
	}
	n := copy(p, u.buf)
	u.buf = u.buf[n:]
	return n, nil
}
