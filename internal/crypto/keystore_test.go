package crypto_test

import (
	"bytes"
	"context"
	"errors"
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

func TestMasterKeyFileAndDatabaseCheck(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := dir + "/master.key"
	key, created, err := crypto.LoadMasterKey(path)
	if err != nil || !created {
		t.Fatalf("first load: created=%v err=%v", created, err)
	}
	again, created, err := crypto.LoadMasterKey(path)
	if err != nil || created || !bytes.Equal(key, again) {
		t.Fatalf("second load: created=%v err=%v same=%v", created, err, bytes.Equal(key, again))
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Fatalf("master key file mode %v, want 0600", fi.Mode().Perm())
	}
	pool := pgtest.NewPool(t)
	kr, _ := crypto.NewKeyring(key)
	if err := kr.CheckDatabase(ctx, pool); err != nil {
		t.Fatal(err)
	}
	if err := kr.CheckDatabase(ctx, pool); err != nil {
		t.Fatalf("same key twice: %v", err)
	}
	other, _ := crypto.NewKeyring(crypto.NewMasterKey())
	if err := other.CheckDatabase(ctx, pool); !errors.Is(err, crypto.ErrMasterKeyMismatch) {
		t.Fatalf("another key: %v, want ErrMasterKeyMismatch", err)
	}
	if _, err := crypto.ParseMasterKey("not base64!"); err == nil {
		t.Fatal("a bad key was parsed")
	}
}
