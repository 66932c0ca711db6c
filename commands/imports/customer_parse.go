package imports

import (
	"encoding/json"
	"runtime"
	"sync"

	"github.com/clientele/clientele/domain/company"
)

// parsed is a chunk's records after parsing: records[i] is nil when
// problems[i] rejects record i.
type parsed[R any] struct {
	records  []*R
	problems []error
}

// parseChunk validates the records of a chunk with parse, on every core.
func parseChunk[R any](raws []json.RawMessage, parse func([]byte) (R, error)) *parsed[R] {
	p := &parsed[R]{records: make([]*R, len(raws)), problems: make([]error, len(raws))}
	inParallel(len(raws), func(i int) {
		r, err := parse(raws[i])
		if err != nil {
			p.problems[i] = err
			return
		}
		p.records[i] = &r
	})
	return p
}

// chunkRecords returns the chunk's records as Prepare parsed them ahead
// (ahead.go), or parses them now with the company's parser, with the
// records of chunk.Reject rejected.
func chunkRecords[R any](chunk Chunk, newParser func(company.Company) func([]byte) (R, error)) ([]*R, []error) {
	p, ok := chunk.Prepared.(*parsed[R])
	if !ok || p == nil || len(p.records) != len(chunk.Records) {
		p = parseChunk(unlessRejected(chunk, chunk.Records, newParser(chunk.Company)))
	}
	return withRejects(chunk, p.records, p.problems)
}

// minParallel is the number of items below which inParallel stays on one
// goroutine: a few items cost less than the goroutines.
const minParallel = 64

// inParallel calls f(i) for i in [0, n) on every core, each i once, f
// writing only to its own i. Parsing (phone numbers above all) and
// sealing are most of the Go time of a chunk, are pure, and run while the
// database has nothing to do for the chunk: on two cores this nearly
// halves them.
func inParallel(n int, f func(i int)) {
	workers := min(runtime.GOMAXPROCS(0), n/minParallel)
	if workers <= 1 {
		for i := range n {
			f(i)
		}
		return
	}
	var wg sync.WaitGroup
	var once sync.Once
	var panicked any
	per := (n + workers - 1) / workers
	for from := 0; from < n; from += per {
		wg.Go(func() {
			// A panic of f is raised again in the caller's goroutine, where
			// the caller's recovery (the message handler's) sees it: in a
			// goroutine of its own it would end the process.
			defer func() {
				if p := recover(); p != nil {
					once.Do(func() { panicked = p })
				}
			}()
			for i := from; i < min(from+per, n); i++ {
				f(i)
			}
		})
	}
	wg.Wait()
	if panicked != nil {
		panic(panicked)
	}
}
