package crypto

import "sync"

// KeyCache keeps the data keys a KeyStore loaded (and which subjects had
// none: forgotten), so that a reader that meets the same subjects again
// (a replay of a company's log, whose pages name the same customers over
// and over; the feed of its changes) reads each once. It holds two
// generations of at most size subjects each: the newer takes what is
// put, and when it is full it becomes the older, the older being
// dropped; a subject found in the older is put again. So memory is
// bounded (about 200 bytes a subject, 2 × size at most), whatever the
// number of subjects.
//
// A key is the one found when its subject was first loaded: a key
// destroyed since (Destroy through another KeyStore) is still held. Give
// a cache only to a reader of what was written before it began, where
// that is the answer wanted, and drop the cache with the reader. Safe
// for concurrent use.
type KeyCache struct {
	mu       sync.Mutex
	size     int
	cur, old map[cachedSubject][]byte
}

// cachedSubject names a subject of a company.
type cachedSubject struct{ company, id string }

// NewKeyCache returns a cache of two generations of size subjects.
func NewKeyCache(size int) *KeyCache {
	return &KeyCache{size: max(size, 1), cur: map[cachedSubject][]byte{}}
}

// get returns the key of the subject (nil when it had none) and whether
// the cache holds the subject.
func (c *KeyCache) get(company, id string) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	k := cachedSubject{company, id}
	if key, ok := c.cur[k]; ok {
		return key, true
	}
	key, ok := c.old[k]
	if ok {
		c.putLocked(k, key)
	}
	return key, ok
}

// put keeps the subject's key, nil for none.
func (c *KeyCache) put(company, id string, key []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.putLocked(cachedSubject{company, id}, key)
}

func (c *KeyCache) putLocked(k cachedSubject, key []byte) {
	if len(c.cur) >= c.size {
		c.old, c.cur = c.cur, make(map[cachedSubject][]byte, c.size)
	}
	c.cur[k] = key
}

// drop forgets the subjects (their keys were stored or destroyed). A nil
// cache has nothing to drop.
func (c *KeyCache) drop(company string, ids []string) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, id := range ids {
		delete(c.cur, cachedSubject{company, id})
		delete(c.old, cachedSubject{company, id})
	}
}

// Len is how many subjects the cache holds (for tests).
func (c *KeyCache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.cur) + len(c.old)
}
