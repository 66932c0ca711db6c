package commands

import (
	"encoding/json"
	"runtime"
	"sync"
)

// parseChunk validates the records of a chunk with parse, on every core.
// records[i] is nil when problems[i] rejects record i.
func parseChunk[R any](raws []json.RawMessage, parse func([]byte) (R, error)) (records []*R, problems []error) {
	records, problems = make([]*R, len(raws)), make([]error, len(raws))
	inParallel(len(raws), func(i int) {
		r, err := parse(raws[i])
		if err != nil {
			problems[i] = err
			return
		}
		records[i] = &r
	})
	return records, problems
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
	per := (n + workers - 1) / workers
	for from := 0; from < n; from += per {
		wg.Go(func() {
			for i := from; i < min(from+per, n); i++ {
				f(i)
			}
		})
	}
	wg.Wait()
}
