package crypto

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// LoadMasterKey reads a base64 master key from path, creating the file
// with a fresh key (mode 0600) when it does not exist. created reports
// whether it did.
func LoadMasterKey(path string) (key []byte, created bool, err error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		key = NewMasterKey()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return nil, false, err
		}
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return nil, false, fmt.Errorf("crypto: create master key: %w", err)
		}
		defer f.Close()
		if _, err := f.WriteString(base64.StdEncoding.EncodeToString(key) + "\n"); err != nil {
			return nil, false, err
		}
		return key, true, f.Sync()
	}
	if err != nil {
		return nil, false, fmt.Errorf("crypto: read master key: %w", err)
	}
	key, err = ParseMasterKey(string(b))
	return key, false, err
}

// ParseMasterKey decodes a base64 master key.
func ParseMasterKey(s string) ([]byte, error) {
	key, err := base64.StdEncoding.DecodeString(strings.TrimSpace(s))
	if err != nil || len(key) != KeySize {
		return nil, fmt.Errorf("crypto: a master key is %d bytes in base64", KeySize)
	}
	return key, nil
}

// ErrMasterKeyMismatch reports a master key other than the one the
// database was set up with.
var ErrMasterKeyMismatch = errors.New("crypto: this master key is not the one the database was set up with; start with the original key (--master-key-file or CLIENTELE_MASTER_KEY)")

// fingerprint identifies a master key without revealing it.
func (k *Keyring) fingerprint() []byte {
	m := hmac.New(sha256.New, k.hashKey)
	m.Write([]byte("clientele master key fingerprint"))
	return m.Sum(nil)
}

// CheckDatabase records the keyring's fingerprint in a database that has
// none yet, and fails with ErrMasterKeyMismatch when the database was set
// up with another master key.
func (k *Keyring) CheckDatabase(ctx context.Context, q Querier) error {
	if _, err := q.Exec(ctx, `INSERT INTO master_key (id, fingerprint) VALUES (1, $1) ON CONFLICT (id) DO NOTHING`, k.fingerprint()); err != nil {
		return fmt.Errorf("crypto: record master key: %w", err)
	}
	rows, err := q.Query(ctx, `SELECT fingerprint FROM master_key WHERE id = 1`)
	if err != nil {
		return err
	}
	defer rows.Close()
	var stored []byte
	for rows.Next() {
		if err := rows.Scan(&stored); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	if !bytes.Equal(stored, k.fingerprint()) {
		return ErrMasterKeyMismatch
	}
	return nil
}
