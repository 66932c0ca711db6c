package imports

import (
	"bytes"
	"testing"

	"github.com/clientele/clientele/internal/crypto"
)

// testMasterKey is the master key of this package's tests: one fixed key,
// so that a helper process (kill_test.go) opens what its parent staged.
var testMasterKey = bytes.Repeat([]byte{0x5c}, crypto.KeySize)

// testKeys returns the keys of the package's tests.
func testKeys(t testing.TB) crypto.KeyStore {
	t.Helper()
	kr, err := crypto.NewKeyring(testMasterKey)
	if err != nil {
		t.Fatal(err)
	}
	return crypto.KeyStore{Keyring: kr}
}

// TestKeys is testKeys for the package's external tests.
var TestKeys = testKeys
