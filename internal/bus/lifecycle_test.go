package bus_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/clientele/clientele/internal/bus"
)

func TestLifecycleRunsOnceAndCloseWaits(t *testing.T) {
	var l bus.Lifecycle
	ended := make(chan struct{})
	ctx, end, err := l.Begin(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		defer end()        // last: Close returns after it
		defer close(ended) // first
		l.SetRunning(true)
		<-ctx.Done()
		time.Sleep(20 * time.Millisecond) // Close must wait for this
	}()
	if _, _, err := l.Begin(context.Background()); !errors.Is(err, bus.ErrStarted) {
		t.Fatalf("second Begin: %v, want ErrStarted", err)
	}
	for !l.Running() {
		time.Sleep(time.Millisecond)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ended:
	default:
		t.Fatal("Close returned before the run ended")
	}
	if l.Running() {
		t.Fatal("still running after Close")
	}
	var closed bus.Lifecycle
	_ = closed.Close()
	if _, _, err := closed.Begin(context.Background()); !errors.Is(err, bus.ErrStarted) {
		t.Fatalf("Begin after Close: %v, want ErrStarted", err)
	}
}
