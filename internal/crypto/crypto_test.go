package crypto_test

import (
	"bytes"
	"errors"
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
	h := a.IdentifierHash("c1", "email", "ann@example.com")
	if !bytes.Equal(h, b.IdentifierHash("c1", "email", "ann@example.com")) {
		t.Fatal("hash is not stable for one master key")
	}
	for name, other := range map[string][]byte{
		"other company": a.IdentifierHash("c2", "email", "ann@example.com"),
		"other kind":    a.IdentifierHash("c1", "phone", "ann@example.com"),
		"other value":   a.IdentifierHash("c1", "email", "bob@example.com"),
		"no separator":  a.IdentifierHash("c1e", "mail", "ann@example.com"),
	} {
		if bytes.Equal(h, other) {
			t.Errorf("%s: same hash", name)
		}
	}
	if _, err := crypto.NewKeyring([]byte("short")); err == nil {
		t.Error("a short master key was accepted")
	}
}
