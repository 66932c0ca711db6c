package crypto_test

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/clientele/clientele/internal/crypto"
)

func TestSealOpenAndShredding(t *testing.T) {
	kr, err := crypto.NewKeyring(crypto.NewMasterKey())
	if err != nil {
		t.Fatal(err)
	}
	plain, wrapped, err := kr.NewDataKey()
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(wrapped, plain) {
		t.Fatal("wrapped key contains the clear key")
	}
	unwrapped, err := kr.Unwrap(wrapped)
	if err != nil || !bytes.Equal(unwrapped, plain) {
		t.Fatalf("unwrap: %v", err)
	}
	secret := []byte(`{"email":"ann@example.com"}`)
	sealed, err := crypto.Seal(plain, secret, []byte("customer-1"))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(sealed, []byte("ann@example.com")) {
		t.Fatal("sealed data contains the plaintext")
	}
	got, err := crypto.Open(plain, sealed, []byte("customer-1"))
	if err != nil || !bytes.Equal(got, secret) {
		t.Fatalf("open: %q, %v", got, err)
	}
	for name, tc := range map[string]struct{ key, aad []byte }{
		"another key":     {crypto.NewMasterKey(), []byte("customer-1")},
		"another subject": {plain, []byte("customer-2")},
	} {
		if _, err := crypto.Open(tc.key, sealed, tc.aad); !errors.Is(err, crypto.ErrDecrypt) {
			t.Errorf("%s: err = %v, want ErrDecrypt", name, err)
		}
	}
	other, _ := crypto.NewKeyring(crypto.NewMasterKey())
	if _, err := other.Unwrap(wrapped); !errors.Is(err, crypto.ErrDecrypt) {
		t.Errorf("unwrap with another master key: %v, want ErrDecrypt", err)
	}
}

func TestIdentifierHash(t *testing.T) {
	master := crypto.NewMasterKey()
	a, _ := crypto.NewKeyring(master)
	b, _ := crypto.NewKeyring(master)
	otherMaster, _ := crypto.NewKeyring(crypto.NewMasterKey())
	h := a.IdentifierHash("c1", "email", "ann@example.com")
	if len(h) != crypto.IdentifierHashSize {
		t.Fatalf("hash has %d bytes, want %d", len(h), crypto.IdentifierHashSize)
	}
	if !bytes.Equal(h, b.IdentifierHash("c1", "email", "ann@example.com")) {
		t.Fatal("hash is not stable for one master key")
	}
	for name, other := range map[string][]byte{
		"other company": a.IdentifierHash("c2", "email", "ann@example.com"),
		"other kind":    a.IdentifierHash("c1", "phone", "ann@example.com"),
		"other value":   a.IdentifierHash("c1", "email", "bob@example.com"),
		"no separator":  a.IdentifierHash("c1e", "mail", "ann@example.com"),
		"other master":  otherMaster.IdentifierHash("c1", "email", "ann@example.com"),
	} {
		if bytes.Equal(h, other) {
			t.Errorf("%s: same hash", name)
		}
	}
	if _, err := crypto.NewKeyring([]byte("short")); err == nil {
		t.Error("a short master key was accepted")
	}
}

// TestIdentifierHashFormat pins the stored form: the registry holds these
// hashes, so a change of it loses every identity. Hashes computed in turn
// and at once must all be the reference.
func TestIdentifierHashFormat(t *testing.T) {
	master := make([]byte, crypto.KeySize)
	for i := range master {
		master[i] = byte(i)
	}
	kr, err := crypto.NewKeyring(master)
	if err != nil {
		t.Fatal(err)
	}
	hmacOf := func(key []byte, msg string) []byte {
		m := hmac.New(sha256.New, key)
		m.Write([]byte(msg))
		return m.Sum(nil)
	}
	want := func(company, kind, value string) []byte {
		hashKey := hmacOf(master, "clientele identifier hashing")
		return hmacOf(hashKey, company+"\x00"+kind+"\x00"+value+"\x00")[:crypto.IdentifierHashSize]
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 100 {
				value := fmt.Sprintf("person-%d-%d@example.com", g, i)
				if got, w := kr.IdentifierHash("c1", "email", value), want("c1", "email", value); !bytes.Equal(got, w) {
					t.Errorf("IdentifierHash(%q) = %x, want %x", value, got, w)
					return
				}
			}
		})
	}
	wg.Wait()
}

// BenchmarkIdentifierHash measures one identity's hash; an import hashes
// three per customer record.
func BenchmarkIdentifierHash(b *testing.B) {
	kr, err := crypto.NewKeyring(crypto.NewMasterKey())
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		kr.IdentifierHash("01a1fe58cd417ab3b20a1a9547bcdc28", "email", "ann.anderson@example.com")
	}
}

func TestSealCompressed(t *testing.T) {
	key := crypto.NewMasterKey()
	plain := []byte(strings.Repeat(`{"email": "someone@example.org", "tags": ["a", "b"]}`+"\n", 1000))
	sealed, err := crypto.SealCompressed(key, plain, []byte("aad"))
	if err != nil {
		t.Fatal(err)
	}
	if len(sealed) > len(plain)/10 {
		t.Errorf("sealed %d bytes of %d: not compressed", len(sealed), len(plain))
	}
	if bytes.Contains(sealed, []byte("someone@example.org")) {
		t.Error("the sealed bytes hold the plaintext")
	}
	got, err := crypto.OpenCompressed(key, sealed, []byte("aad"))
	if err != nil || !bytes.Equal(got, plain) {
		t.Fatalf("opened %d bytes, %v; want the %d bytes sealed", len(got), err, len(plain))
	}
	if _, err := crypto.OpenCompressed(key, sealed, []byte("other")); !errors.Is(err, crypto.ErrDecrypt) {
		t.Errorf("opened under another aad: %v, want ErrDecrypt", err)
	}
	if _, err := crypto.OpenCompressed(crypto.NewMasterKey(), sealed, []byte("aad")); !errors.Is(err, crypto.ErrDecrypt) {
		t.Errorf("opened with another key: %v, want ErrDecrypt", err)
	}
}
