package readmodels

import (
	"fmt"
	"testing"
)

// TestKeyCacheBounded puts many more customers than the cache holds: it
// never holds more than two generations, the customers put last are
// found with their keys (a forgotten one, nil, found as such), and one
// found in the older generation is kept when that one is dropped.
func TestKeyCacheBounded(t *testing.T) {
	const size = 100
	k := newKeyCache(size)
	key := func(i int) []byte { return []byte(fmt.Sprint("key-", i)) }
	k.put("kept", key(-1))
	for i := range 10 * size {
		if i%size == size/2 {
			if got, ok := k.get("kept"); !ok || string(got) != string(key(-1)) {
				t.Fatalf("after %d puts: kept = %q, %v; want its key", i, got, ok)
			}
		}
		k.put(fmt.Sprint("c", i), key(i))
		if n := len(k.cur) + len(k.old); n > 2*size {
			t.Fatalf("after %d puts the cache holds %d keys, more than %d", i+1, n, 2*size)
		}
	}
	k.put("forgotten", nil)
	for i := 10*size - size/2; i < 10*size; i++ {
		if got, ok := k.get(fmt.Sprint("c", i)); !ok || string(got) != string(key(i)) {
			t.Errorf("c%d = %q, %v; want its key", i, got, ok)
		}
	}
	if got, ok := k.get("forgotten"); !ok || got != nil {
		t.Errorf("forgotten = %q, %v; want nil, found", got, ok)
	}
	if _, ok := k.get("c0"); ok {
		t.Error("c0, put first, is still held")
	}
	if _, ok := k.get("kept"); !ok {
		t.Error("kept, found again before each drop, was dropped")
	}
}
