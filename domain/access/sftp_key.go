package access

import (
	"strings"
	"time"
	"unicode/utf8"

	"github.com/clientele/clientele/domain"
)

// SFTPKey is a public key registered for a company's SFTP drop directory
// (docs/sftp.md): a client that proves it holds the private key logs in
// as the company, like a token without scopes or roles. A key is a
// credential of the company, not of a user, so only admins manage them.
type SFTPKey struct {
	ID        string
	CompanyID string
	Name      string
	// Fingerprint is the key's SHA-256 fingerprint as OpenSSH prints it
	// ("SHA256:<base64>"): the key's identity, by which it is looked up
	// at log-in.
	Fingerprint string
	// PublicKey is the key in authorized_keys form, without its comment.
	PublicKey string
	CreatedBy string
	CreatedAt time.Time
}

// SFTP key events.
const (
	SFTPKeyAddedType   = "SFTPKeyAdded"
	SFTPKeyRemovedType = "SFTPKeyRemoved"
)

// SFTPKeyAdded starts a key's stream.
type SFTPKeyAdded struct {
	ID          string    `json:"id"`
	Name        string    `json:"name"`
	Fingerprint string    `json:"fingerprint"`
	PublicKey   string    `json:"public_key"`
	CreatedBy   string    `json:"created_by"`
	CreatedAt   time.Time `json:"created_at"`
}

// SFTPKeyRemoved ends a key: it no longer logs in.
type SFTPKeyRemoved struct {
	ID        string    `json:"id"`
	RemovedAt time.Time `json:"removed_at"`
}

// maxSFTPKeyName bounds a key's name, as a token's is bounded.
const maxSFTPKeyName = 200

// NewSFTPKey decides the registration of a key whose parsed form
// (publicKey, fingerprint) the caller derived from what the client sent.
// Parsing the key is the SSH library's business, kept out of the domain.
func NewSFTPKey(p Principal, id, name, publicKey, fingerprint string, now time.Time) (SFTPKey, error) {
	if err := MayManageSFTPKeys(p); err != nil {
		return SFTPKey{}, err
	}
	name = strings.TrimSpace(name)
	if utf8.RuneCountInString(name) > maxSFTPKeyName {
		return SFTPKey{}, domain.Errorf(domain.Validation, "name is longer than %d characters", maxSFTPKeyName)
	}
	if publicKey == "" || fingerprint == "" {
		return SFTPKey{}, domain.Errorf(domain.Validation, "public_key is required")
	}
	return SFTPKey{
		ID: id, CompanyID: p.CompanyID, Name: name, Fingerprint: fingerprint, PublicKey: publicKey,
		CreatedBy: p.CreatedBy(), CreatedAt: now,
	}, nil
}

// MayManageSFTPKeys decides who lists, adds and removes a company's SFTP
// keys: admins (and the operator). A key logs in as the whole company,
// which is more than a staff user may hand out; listing them tells which
// machines can, which is an admin's business too.
func MayManageSFTPKeys(p Principal) error {
	if p.HasRole(RoleAdmin) {
		return nil
	}
	return domain.Errorf(domain.Forbidden, "managing SFTP keys requires the admin role")
}
