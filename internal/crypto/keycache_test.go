package crypto_test

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/clientele/clientele/internal/crypto"
	"github.com/clientele/clientele/internal/pg/pgtest"
)

// countingReader counts the queries read through it.
type countingReader struct {
	crypto.Reader
	queries int
}

func (r *countingReader) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	r.queries++
	return r.Reader.Query(ctx, sql, args...)
}

// TestKeyStoreCache loads keys through a KeyStore with a cache: subjects
// met again are not read again (a forgotten one neither: it stays
// absent), each company's apart; a key destroyed through the same
// KeyStore is read again, gone. Without a cache every Load reads.
func TestKeyStoreCache(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	kr, _ := crypto.NewKeyring(crypto.NewMasterKey())
	created, err := crypto.KeyStore{Keyring: kr}.Create(ctx, pool, "c1", []string{"a", "b"})
	if err != nil {
		t.Fatal(err)
	}
	q := &countingReader{Reader: pool}
	ks := crypto.KeyStore{Keyring: kr, Cache: crypto.NewKeyCache(100)}
	load := func(company string, ids ...string) map[string][]byte {
		t.Helper()
		keys, err := ks.Load(ctx, q, company, ids)
		if err != nil {
			t.Fatal(err)
		}
		return keys
	}
	if got := load("c1", "a", "gone"); len(got) != 1 || !bytes.Equal(got["a"], created["a"]) || q.queries != 1 {
		t.Fatalf("first load: %d keys, %d queries", len(got), q.queries)
	}
	if got := load("c1", "a", "gone"); len(got) != 1 || !bytes.Equal(got["a"], created["a"]) || q.queries != 1 {
		t.Errorf("the same again: %d keys, %d queries; want 1 key from the cache, no query", len(got), q.queries)
	}
	if got := load("c1", "a", "b"); len(got) != 2 || !bytes.Equal(got["b"], created["b"]) || q.queries != 2 {
		t.Errorf("one more subject: %d keys, %d queries; want 2 keys, one query more", len(got), q.queries)
	}
	if got := load("c2", "a"); len(got) != 0 || q.queries != 3 {
		t.Errorf("another company's subject of the same id: %d keys, %d queries; want none, read", len(got), q.queries)
	}
	if err := ks.Destroy(ctx, pool, "c1", []string{"a"}); err != nil {
		t.Fatal(err)
	}
	if got := load("c1", "a", "b"); len(got) != 1 || got["a"] != nil || q.queries != 4 {
		t.Errorf("after Destroy: %d keys, a %x, %d queries; want b only, read again", len(got), got["a"], q.queries)
	}

	plain := crypto.KeyStore{Keyring: kr}
	for range 2 {
		if _, err := plain.Load(ctx, q, "c1", []string{"b"}); err != nil {
			t.Fatal(err)
		}
	}
	if q.queries != 6 {
		t.Errorf("without a cache: %d queries, want 6", q.queries)
	}
}

// TestKeyCacheBounded loads many more subjects than the cache holds: it
// never holds more than two generations, and a subject loaded again
// before each generation is dropped stays.
func TestKeyCacheBounded(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	kr, _ := crypto.NewKeyring(crypto.NewMasterKey())
	const size = 100
	ids := make([]string, 10*size)
	for i := range ids {
		ids[i] = fmt.Sprint("s", i)
	}
	if _, err := (crypto.KeyStore{Keyring: kr}).Create(ctx, pool, "c1", append(ids, "kept")); err != nil {
		t.Fatal(err)
	}
	cache := crypto.NewKeyCache(size)
	ks := crypto.KeyStore{Keyring: kr, Cache: cache}
	for i, id := range ids {
		load := []string{id}
		if i%size == size/2 {
			load = append(load, "kept")
		}
		if _, err := ks.Load(ctx, pool, "c1", load); err != nil {
			t.Fatal(err)
		}
		if n := cache.Len(); n > 2*size {
			t.Fatalf("after %d loads the cache holds %d subjects, more than %d", i+1, n, 2*size)
		}
	}
	q := &countingReader{Reader: pool}
	if _, err := ks.Load(ctx, q, "c1", []string{"kept", ids[len(ids)-1]}); err != nil || q.queries != 0 {
		t.Errorf("the subjects kept: %d queries, %v; want none", q.queries, err)
	}
	if _, err := ks.Load(ctx, q, "c1", []string{ids[0]}); err != nil || q.queries != 1 {
		t.Errorf("the first subject, long dropped: %d queries, %v; want it read", q.queries, err)
	}
}
