package crypto_test

import (
	"bytes"
	"context"
	"os"
	"testing"

	"github.com/clientele/clientele/internal/crypto"
	"github.com/clientele/clientele/internal/pg/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

func TestKeyStoreCreateLoadDestroy(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	kr, _ := crypto.NewKeyring(crypto.NewMasterKey())
	ks := crypto.KeyStore{Keyring: kr}
	created, err := ks.Create(ctx, pool, "c1", []string{"a", "b"})
	if err != nil {
		t.Fatal(err)
	}
	loaded, err := ks.Load(ctx, pool, "c1", []string{"a", "b", "missing"})
	if err != nil {
		t.Fatal(err)
	}
	if len(loaded) != 2 || !bytes.Equal(loaded["a"], created["a"]) || !bytes.Equal(loaded["b"], created["b"]) {
		t.Fatalf("loaded keys differ from created ones: %d keys", len(loaded))
	}
	if other, _ := ks.Load(ctx, pool, "c2", []string{"a"}); len(other) != 0 {
		t.Fatal("a key was loaded for another company")
	}
	if err := ks.Destroy(ctx, pool, "c1", []string{"a"}); err != nil {
		t.Fatal(err)
	}
	loaded, _ = ks.Load(ctx, pool, "c1", []string{"a", "b"})
	if _, ok := loaded["a"]; ok || len(loaded) != 1 {
		t.Fatalf("after destroy: %d keys, a present %v", len(loaded), ok)
	}
	var raw int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM customer_keys WHERE position($1 in wrapped_key) > 0`, created["b"]).Scan(&raw); err != nil {
		t.Fatal(err)
	}
	if raw != 0 {
		t.Fatal("a clear data key is stored")
	}
}
