// Package crypto implements crypto-shredding: personal data in events is
// sealed with a per-subject data key (AES-256-GCM); data keys are stored
// wrapped by a master key; forgetting a subject destroys its data key, so
// every copy of its sealed data, in the log or in a backup restored later
// without the key, stays unreadable. Identifiers are kept as keyed hashes
// (HMAC-SHA-256, truncated to 128 bits) so that a forgotten subject is still recognised without
// its identifiers being stored.
package crypto

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"hash"
	"io"
	"sync"
)

// KeySize is the size of master and data keys: AES-256.
const KeySize = 32

// ErrDecrypt reports sealed data that does not open with the given key:
// a wrong or destroyed key, or tampered data.
var ErrDecrypt = errors.New("crypto: cannot open sealed data")

// Keyring holds the master key.
type Keyring struct {
	wrap    cipher.AEAD
	hashKey []byte
	// hashers holds idle keyed HMACs for IdentifierHash.
	hashers sync.Pool
}

// NewKeyring returns a keyring on a 32-byte master key.
func NewKeyring(master []byte) (*Keyring, error) {
	if len(master) != KeySize {
		return nil, fmt.Errorf("crypto: master key has %d bytes, want %d", len(master), KeySize)
	}
	// Separate keys for wrapping and for identifier hashes, derived from
	// the master key, so that neither use weakens the other.
	wrapKey := derive(master, "clientele data-key wrapping")
	aead, err := newAEAD(wrapKey)
	if err != nil {
		return nil, err
	}
	return &Keyring{wrap: aead, hashKey: derive(master, "clientele identifier hashing")}, nil
}

// NewMasterKey returns a fresh random master key.
func NewMasterKey() []byte {
	k := make([]byte, KeySize)
	if _, err := io.ReadFull(rand.Reader, k); err != nil {
		panic(fmt.Sprintf("crypto: random source failed: %v", err))
	}
	return k
}

// NewDataKey returns a fresh data key, in clear and wrapped by the master
// key. Store only the wrapped form.
func (k *Keyring) NewDataKey() (plain, wrapped []byte, err error) {
	plain = NewMasterKey()
	wrapped, err = seal(k.wrap, plain, nil)
	return plain, wrapped, err
}

// Unwrap returns the clear data key of a wrapped one.
func (k *Keyring) Unwrap(wrapped []byte) ([]byte, error) {
	return open(k.wrap, wrapped, nil)
}

// IdentifierHashSize is the length of an identifier hash: 16 bytes, the
// first half of the HMAC-SHA-256. 128 bits are collision-free for any
// realistic number of identities (the chance of any collision among 10^12
// of them is about 10^-15; the key keeps anyone without the master key
// from searching for one), and keep the identity registry's primary key
// narrow: a 16-byte key makes its inserts and lookups much cheaper than
// the full 32 bytes (docs/customers.md, "Write-side state").
const IdentifierHashSize = 16

// IdentifierHash is the keyed hash of an identifier of kind ("email",
// "phone", "external_id") within a company: the first IdentifierHashSize
// bytes of an HMAC-SHA-256 over company, kind and value. Normalise value
// first. Since the company is hashed in, a hash is unique across
// companies on its own.
func (k *Keyring) IdentifierHash(companyID, kind, value string) []byte {
	// An import hashes three identities per record: reusing a keyed HMAC
	// (whose Reset restores the keyed state instead of hashing the key
	// again) takes a third of the time of a new one.
	m, _ := k.hashers.Get().(hash.Hash)
	if m == nil {
		m = hmac.New(sha256.New, k.hashKey)
	}
	m.Reset()
	msg := make([]byte, 0, len(companyID)+len(kind)+len(value)+3)
	for _, part := range []string{companyID, kind, value} {
		msg = append(append(msg, part...), 0)
	}
	m.Write(msg)
	var sum [sha256.Size]byte
	out := append([]byte(nil), m.Sum(sum[:0])[:IdentifierHashSize]...)
	k.hashers.Put(m)
	return out
}

// Seal encrypts plaintext with a data key. aad (for example the subject's
// id) is authenticated but not encrypted: sealed data moved to another
// subject does not open.
func Seal(dataKey, plaintext, aad []byte) ([]byte, error) {
	aead, err := newAEAD(dataKey)
	if err != nil {
		return nil, err
	}
	return seal(aead, plaintext, aad)
}

// Open decrypts data sealed by Seal; ErrDecrypt when it cannot.
func Open(dataKey, sealed, aad []byte) ([]byte, error) {
	aead, err := newAEAD(dataKey)
	if err != nil {
		return nil, err
	}
	return open(aead, sealed, aad)
}

func newAEAD(key []byte) (cipher.AEAD, error) {
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("crypto: %w", err)
	}
	return cipher.NewGCM(block)
}

// seal returns nonce || ciphertext.
func seal(aead cipher.AEAD, plaintext, aad []byte) ([]byte, error) {
	out := make([]byte, aead.NonceSize(), aead.NonceSize()+len(plaintext)+aead.Overhead())
	if _, err := io.ReadFull(rand.Reader, out); err != nil {
		return nil, fmt.Errorf("crypto: nonce: %w", err)
	}
	return aead.Seal(out, out, plaintext, aad), nil
}

func open(aead cipher.AEAD, sealed, aad []byte) ([]byte, error) {
	n := aead.NonceSize()
	if len(sealed) < n+aead.Overhead() {
		return nil, ErrDecrypt
	}
	plain, err := aead.Open(nil, sealed[:n], sealed[n:], aad)
	if err != nil {
		return nil, ErrDecrypt
	}
	return plain, nil
}

func derive(master []byte, purpose string) []byte {
	m := hmac.New(sha256.New, master)
	m.Write([]byte(purpose))
	return m.Sum(nil)
}
