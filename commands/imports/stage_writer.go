package imports

import (
	"bytes"
	"context"
	"sync/atomic"
)

// chunkWriter writes chunks in the background, so that the next chunk is
// read and checked while the previous one travels to the database. It has
// two buffers: one being filled, one being written. Memory stays bounded,
// and a slow database slows the upload down instead of filling memory.
type chunkWriter struct {
	s      *Store
	ctx    context.Context
	runID  string
	key    []byte // the run's, sealing its chunks
	jobs   chan chunkJob
	free   chan *bytes.Buffer
	done   chan error
	failed atomic.Bool
}

type chunkJob struct {
	seq, first, n int
	buf           *bytes.Buffer
}

func (s *Store) newChunkWriter(ctx context.Context, runID string, key []byte) *chunkWriter {
	w := &chunkWriter{s: s, ctx: ctx, runID: runID, key: key,
		jobs: make(chan chunkJob), free: make(chan *bytes.Buffer, 2), done: make(chan error, 1)}
	w.free <- new(bytes.Buffer)
	w.free <- new(bytes.Buffer)
	go w.run()
	return w
}

func (w *chunkWriter) run() {
	var err error
	for j := range w.jobs {
		if err == nil {
			if err = w.s.addChunk(w.ctx, w.runID, w.key, j.seq, j.first, j.n, j.buf.Bytes()); err != nil {
				w.failed.Store(true)
			}
		}
		j.buf.Reset()
		w.free <- j.buf
	}
	w.done <- err
}

// buffer returns an empty buffer to fill, once one is free.
func (w *chunkWriter) buffer() *bytes.Buffer { return <-w.free }

// write hands a filled buffer over. It reports false when an earlier
// chunk failed: stop reading, close tells the error.
func (w *chunkWriter) write(j chunkJob) bool {
	w.jobs <- j
	return !w.failed.Load()
}

// close waits until every chunk handed over is written, and returns the
// first error.
func (w *chunkWriter) close() error {
	close(w.jobs)
	return <-w.done
}
