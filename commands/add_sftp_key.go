package commands

import (
	"context"
	"crypto/rsa"
	"strings"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/clientele/clientele/domain"
	"github.com/clientele/clientele/domain/access"
	"github.com/clientele/clientele/eventstore"
)

// AddSFTPKey registers a public key with which SFTP clients log in as the
// principal's company (access.NewSFTPKey: admins only).
type AddSFTPKey struct {
	Principal access.Principal
	// PublicKey is one line of an authorized_keys file: "<type> <base64>
	// [comment]", without options.
	PublicKey string
	// Name tells the key apart in listings; the line's comment when empty.
	Name string
}

// AddSFTPKeyHandler handles AddSFTPKey.
type AddSFTPKeyHandler struct {
	store eventstore.Store
	now   func() time.Time
}

// NewAddSFTPKeyHandler returns a handler on store.
func NewAddSFTPKeyHandler(store eventstore.Store, now func() time.Time) AddSFTPKeyHandler {
	if store == nil || now == nil {
		panic("commands: NewAddSFTPKeyHandler: nil dependency")
	}
	return AddSFTPKeyHandler{store: store, now: now}
}

// minRSABits is the smallest RSA key accepted: shorter ones are within
// reach of a determined attacker, and OpenSSH refuses them too.
const minRSABits = 2048

// Handle parses the key and records it.
func (h AddSFTPKeyHandler) Handle(ctx context.Context, cmd AddSFTPKey) (access.SFTPKey, error) {
	p := cmd.Principal
	if err := RequireCompany(p); err != nil {
		return access.SFTPKey{}, err
	}
	if err := checkSystemCompany(ctx, h.store, p); err != nil {
		return access.SFTPKey{}, err
	}
	pub, comment, err := ParseSFTPKey(cmd.PublicKey)
	if err != nil {
		return access.SFTPKey{}, err
	}
	name := cmd.Name
	if strings.TrimSpace(name) == "" {
		name = comment
	}
	k, err := access.NewSFTPKey(p, NewID(), name, strings.TrimSpace(string(ssh.MarshalAuthorizedKey(pub))),
		ssh.FingerprintSHA256(pub), stamp(h.now()))
	if err != nil {
		return access.SFTPKey{}, err
	}
	_, err = h.store.Append(ctx, eventstore.Commit{
		Metadata: Metadata(ctx, p, p.CompanyID),
		Streams: []eventstore.StreamAppend{{
			StreamID: access.SFTPKeyStream(p.CompanyID, k.ID), ExpectedVersion: eventstore.NoStream,
			Events: []eventstore.Event{eventstore.NewEvent(access.SFTPKeyAddedType, access.SFTPKeyAdded{
				ID: k.ID, Name: k.Name, Fingerprint: k.Fingerprint, PublicKey: k.PublicKey,
				CreatedBy: k.CreatedBy, CreatedAt: k.CreatedAt,
			})},
		}},
	})
	if err != nil {
		return access.SFTPKey{}, appendError(err)
	}
	return k, nil
}

// ParseSFTPKey reads one authorized_keys line and returns the key and its
// comment. Options ("from=...") are refused rather than ignored: the SFTP
// server would not apply them, and a key registered with a restriction
// that silently does nothing is worse than a refusal. Certificates, DSA
// and short RSA keys are refused too.
func ParseSFTPKey(line string) (ssh.PublicKey, string, error) {
	line = strings.TrimSpace(line)
	if line == "" {
		return nil, "", domain.Errorf(domain.Validation, "public_key is required (one line of an authorized_keys file, e.g. the contents of ~/.ssh/id_ed25519.pub)")
	}
	pub, comment, options, rest, err := ssh.ParseAuthorizedKey([]byte(line))
	if err != nil {
		// The SSH library's reason ("ssh: no key found; last parsing
		// error ...") is in its terms, not the client's.
		return nil, "", domain.Errorf(domain.Validation, "public_key is not an OpenSSH public key line (a key type such as ssh-ed25519, the key in base64, an optional comment: one line of an authorized_keys file, e.g. the contents of ~/.ssh/id_ed25519.pub)")
	}
	switch {
	case len(options) > 0:
		return nil, "", domain.Errorf(domain.Validation, "public_key: authorized_keys options (%s) are not supported", strings.Join(options, ","))
	case strings.TrimSpace(string(rest)) != "":
		return nil, "", domain.Errorf(domain.Validation, "public_key holds more than one key; register them one at a time")
	}
	if _, ok := pub.(*ssh.Certificate); ok {
		return nil, "", domain.Errorf(domain.Validation, "public_key: certificates are not supported; register the plain key")
	}
	switch pub.Type() {
	case "ssh-dss": // ssh.KeyAlgoDSA, deprecated with DSA itself
		return nil, "", domain.Errorf(domain.Validation, "public_key: DSA keys are not accepted; use ed25519, ECDSA or RSA of %d bits or more", minRSABits)
	case ssh.KeyAlgoRSA:
		if ck, ok := pub.(ssh.CryptoPublicKey); ok {
			if rk, ok := ck.CryptoPublicKey().(*rsa.PublicKey); ok && rk.N.BitLen() < minRSABits {
				return nil, "", domain.Errorf(domain.Validation, "public_key: an RSA key needs %d bits or more (this one has %d)", minRSABits, rk.N.BitLen())
			}
		}
	}
	return pub, comment, nil
}
