package projections

import "time"

// SetFinishLockTimeout shortens the lock waits of a rebuild's swap for a
// test, and returns the function that restores them.
func SetFinishLockTimeout(d time.Duration) (restore func()) {
	old := finishLockTimeout
	finishLockTimeout = d
	return func() { finishLockTimeout = old }
}

// SetDecideChunk sets how many members the campaign statistics decide at
// a time, and returns the function that restores it.
func SetDecideChunk(n int) (restore func()) {
	old := decideChunk
	decideChunk = n
	return func() { decideChunk = old }
}
