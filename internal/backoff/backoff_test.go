package backoff_test

import (
	"testing"
	"time"

	"github.com/clientele/clientele/internal/backoff"
)

func TestDoublingAfter(t *testing.T) {
	b := backoff.Doubling{Min: 500 * time.Millisecond, Max: 30 * time.Second}
	tests := []struct {
		failures int
		want     time.Duration
	}{
		{1, 500 * time.Millisecond},
		{2, time.Second},
		{3, 2 * time.Second},
		{7, 30 * time.Second},
		{1000, 30 * time.Second},
	}
	for _, tt := range tests {
		if got := b.After(tt.failures); got != tt.want {
			t.Errorf("After(%d) = %v, want %v", tt.failures, got, tt.want)
		}
	}
	if got := (backoff.Doubling{Min: time.Minute, Max: time.Second}).After(1); got != time.Second {
		t.Errorf("a Min above Max: After(1) = %v, want Max", got)
	}
}

func TestDoublingJitter(t *testing.T) {
	b := backoff.Doubling{Min: time.Second, Max: time.Hour, Jitter: 0.2}
	for failures, nominal := range map[int]time.Duration{1: time.Second, 5: 16 * time.Second, 13: time.Hour} {
		seen := map[time.Duration]bool{}
		for range 50 {
			d := b.After(failures)
			if d < nominal*8/10 || d > min(nominal*12/10, time.Hour) {
				t.Fatalf("After(%d) = %v, nominal %v", failures, d, nominal)
			}
			seen[d] = true
		}
		if len(seen) < 2 {
			t.Errorf("After(%d) is always %v: no jitter", failures, nominal)
		}
	}
}
