package testlog_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/clientele/clientele/internal/testlog"
)

func TestBufferConcurrentWrites(t *testing.T) {
	var b testlog.Buffer
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 100 {
				fmt.Fprintf(&b, "line %d\n", i)
				_ = b.String()
			}
		}()
	}
	wg.Wait()
	if n := strings.Count(b.String(), "\n"); n != 800 {
		t.Errorf("%d lines, want 800", n)
	}
}
