// Package wake tells the waiters of a process that what they poll for may
// be there now: a consumer of the outbox that found nothing waits for the
// next commit of its own process instead of polling again and again.
//
// A Signal carries no data and may be fired at any time, for nothing (a
// waiter then looks once more and finds nothing); a waiter never misses a
// Notify that comes after it took its channel (C), so the order is: take
// the channel, look, and if nothing was there, wait on the channel.
package wake

import "sync"

// Signal is a broadcast to every waiter: Notify closes the channel the
// waiters hold and hands out a new one. The zero value is ready; a nil
// *Signal never fires.
type Signal struct {
	mu sync.Mutex
	ch chan struct{}
}

// C returns the channel that the next Notify closes. A nil Signal returns
// a nil channel, which is never ready.
func (s *Signal) C() <-chan struct{} {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ch == nil {
		s.ch = make(chan struct{})
	}
	return s.ch
}

// Notify wakes every waiter holding a channel from C. It does nothing on a
// nil Signal, and costs nothing when nobody has taken a channel.
func (s *Signal) Notify() {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ch != nil {
		close(s.ch)
		s.ch = nil
	}
}
