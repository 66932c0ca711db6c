package projections

import "time"

// SetFinishLockTimeout shortens the lock waits of a rebuild's swap for a
// test, and returns the function that restores them.
func SetFinishLockTimeout(d time.Duration) (restore func()) {
	old := finishLockTimeout
	finishLockTimeout = d
	return func() { finishLockTimeout = old }
}
