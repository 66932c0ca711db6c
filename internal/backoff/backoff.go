// Package backoff is the one calculation of how long work that keeps
// failing waits before it is tried again: a delay that doubles with each
// failure in a row, from a least to a most, optionally moved at random so
// that workers failing together do not retry together.
//
// It only computes. The loops that wait keep their own count of failures:
// bus.Resumer per key (the projection runtime's projectors, the import
// worker's and the SFTP queue's companies), the webhook outlets per batch
// in the database (delivery), the SFTP server's accept loop, serve's
// issuing of tracking tokens. A retry within one Watermill delivery is
// Watermill's own (bus.RetryWithBackoff).
package backoff

import (
	"math/rand/v2"
	"time"
)

// Doubling is a delay that doubles with every failure in a row: Min after
// the first, then twice as long each time, never more than Max. Jitter,
// when set (0.2: a fifth), moves each delay at random by up to that
// fraction either way, still never past Max.
type Doubling struct {
	Min, Max time.Duration
	Jitter   float64
}

// After returns the delay after failures failures in a row (at least 1).
func (b Doubling) After(failures int) time.Duration {
	d := b.Min
	for i := 1; i < failures && d < b.Max; i++ {
		d *= 2
	}
	d = min(d, b.Max)
	if b.Jitter > 0 {
		d += time.Duration((rand.Float64()*2 - 1) * b.Jitter * float64(d))
	}
	return min(d, b.Max)
}
