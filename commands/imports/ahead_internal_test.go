package imports

import (
	"fmt"
	"testing"

	"github.com/clientele/clientele/domain/company"
	"github.com/clientele/clientele/internal/pg/pgtest"
)

// TestParseAheadDropsMissingChunks: preparing the chunk after a run's last
// (there is none) leaves no slot behind, so small uploads, one chunk each,
// do not fill the slots and stop every later preparation. It waits on the
// preparation that start reports, not on its slot: the preparation may end
// and drop the slot before the test could look at it.
func TestParseAheadDropsMissingChunks(t *testing.T) {
	a := newAhead(NewStore(pgtest.NewPool(t), testKeys(t)))
	co := company.Company{ID: "co1"}
	for i := range 2 * maxAhead {
		done := a.start(&CustomerImporter{}, fmt.Sprintf("run-%d", i), 1, co)
		if done == nil {
			t.Fatalf("run %d: no preparation started (the slots are full)", i)
		}
		<-done
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if n := len(a.slots); n != 0 {
		t.Errorf("%d slots left for chunks that do not exist", n)
	}
}

// TestInParallelRaisesPanicsInTheCaller: a panic of f reaches the caller's
// goroutine (and so the message handler's recovery), not a goroutine of
// its own, where it would end the process.
func TestInParallelRaisesPanicsInTheCaller(t *testing.T) {
	defer func() {
		if r := recover(); r != "record 700" {
			t.Errorf("recovered %v, want the panic of record 700", r)
		}
	}()
	inParallel(1000, func(i int) {
		if i == 700 {
			panic("record 700")
		}
	})
	t.Error("inParallel returned")
}
