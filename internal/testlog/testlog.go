// Package testlog holds what tests use to read the logs of a service
// they run: a log sink that the service's goroutines write while the
// test reads it. It is imported by tests only.
package testlog

import (
	"bytes"
	"sync"
)

// Buffer is a bytes.Buffer safe for concurrent writers and readers: the
// writer of a logger (slog.NewTextHandler(&buf, nil)) or of a process's
// output, which a test polls with String. The zero value is ready.
type Buffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write appends p.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns what was written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
