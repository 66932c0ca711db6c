package wake_test

import (
	"sync"
	"testing"

	"github.com/clientele/clientele/internal/wake"
)

func ready(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

func TestNotifyWakesEveryHolderOnce(t *testing.T) {
	var s wake.Signal
	a, b := s.C(), s.C()
	if ready(a) || ready(b) {
		t.Fatal("ready before any Notify")
	}
	s.Notify()
	if !ready(a) || !ready(b) {
		t.Fatal("a holder was not woken")
	}
	// A channel taken after the Notify waits for the next one.
	c := s.C()
	if ready(c) {
		t.Fatal("a channel taken after the Notify is ready")
	}
	s.Notify()
	if !ready(c) {
		t.Fatal("the next Notify did not wake")
	}
}

func TestNotifyWithoutHoldersIsNotRemembered(t *testing.T) {
	var s wake.Signal
	s.Notify()
	if ready(s.C()) {
		t.Fatal("a Notify before the channel was taken woke it")
	}
}

func TestNilSignalNeverFires(t *testing.T) {
	var s *wake.Signal
	s.Notify()
	if s.C() != nil {
		t.Fatal("a nil Signal gave a channel")
	}
}

func TestConcurrentNotifyAndTake(t *testing.T) {
	var s wake.Signal
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(2)
		go func() {
			defer wg.Done()
			for range 1000 {
				s.Notify()
			}
		}()
		go func() {
			defer wg.Done()
			for range 1000 {
				c := s.C()
				s.Notify()
				<-c // woken by its own Notify if by no other
			}
		}()
	}
	wg.Wait()
}
