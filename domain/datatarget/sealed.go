package datatarget

import (
	"encoding/json"
	"fmt"

	"github.com/clientele/clientele/domain/access"
)

// Credentials are what an outlet holds that would let anyone act as the
// service towards its receiver: the signing secret and the header values
// (an API key, a bearer token, a cookie may stand under any name). They
// never stand in clear at rest: the log and the read model keep them
// sealed (SealedCredentials), as customers' data is; every answer shows
// them in hint form (Hints), to admins too. An admin may replace them,
// never read them back. Only the commands (to change an outlet) and the
// deliverer (to sign and send a request) open them.
type Credentials struct {
	Secret  string            `json:"secret,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
}

// Hints returns c with every value in hint form (access.TokenHint, as
// access tokens are shown): a few characters at each end of a long value,
// a short one masked whole. The header names stay.
func (c Credentials) Hints() Credentials {
	out := Credentials{Secret: access.TokenHint(c.Secret), Headers: make(map[string]string, len(c.Headers))}
	for name, value := range c.Headers {
		out.Headers[name] = access.TokenHint(value)
	}
	return out
}

// SealedCredentials are Credentials as the log and the read model keep
// them: sealed with a data key of their own (Key, wrapped by the master
// key, as an attempt's raw texts are), bound to their outlet
// (CredentialsAAD), beside their hints.
type SealedCredentials struct {
	Key    []byte      `json:"key"`
	Sealed []byte      `json:"sealed"`
	Hints  Credentials `json:"hints"`
}

// Sealer seals and opens an outlet's credentials: the master key's
// envelope (crypto.Keyring).
type Sealer interface {
	SealEnvelope(plaintext, aad []byte) (wrappedKey, sealed []byte, err error)
	OpenEnvelope(wrappedKey, sealed, aad []byte) ([]byte, error)
}

// CredentialsAAD binds an outlet's sealed credentials to the outlet:
// copied to another, they do not open.
func CredentialsAAD(outletID string) []byte { return []byte("outlet_credentials/" + outletID) }

// SealCredentials seals c, the credentials of the outlet outletID.
func SealCredentials(s Sealer, outletID string, c Credentials) (SealedCredentials, error) {
	plain, err := json.Marshal(c)
	if err != nil {
		return SealedCredentials{}, err
	}
	key, sealed, err := s.SealEnvelope(plain, CredentialsAAD(outletID))
	if err != nil {
		return SealedCredentials{}, fmt.Errorf("seal the credentials of outlet %s: %w", outletID, err)
	}
	return SealedCredentials{Key: key, Sealed: sealed, Hints: c.Hints()}, nil
}

// Open returns the credentials of the outlet outletID that c seals.
func (c SealedCredentials) Open(s Sealer, outletID string) (Credentials, error) {
	plain, err := s.OpenEnvelope(c.Key, c.Sealed, CredentialsAAD(outletID))
	if err != nil {
		return Credentials{}, fmt.Errorf("open the credentials of outlet %s: %w", outletID, err)
	}
	var out Credentials
	if err := json.Unmarshal(plain, &out); err != nil {
		return Credentials{}, fmt.Errorf("open the credentials of outlet %s: %w", outletID, err)
	}
	if out.Headers == nil {
		out.Headers = map[string]string{}
	}
	return out, nil
}

// Credentials returns o's credentials, in clear where o holds them so.
func (o Outlet) Credentials() Credentials {
	return Credentials{Secret: o.Secret, Headers: copyHeaders(o.Request.Headers)}
}

// HasSecret reports whether o signs its requests.
func (o Outlet) HasSecret() bool { return o.Secret != "" || o.Hints.Secret != "" }

// WithCredentials returns o holding c in clear, and their hints.
func (o Outlet) WithCredentials(c Credentials) Outlet {
	o.Secret, o.Request.Headers = c.Secret, copyHeaders(c.Headers)
	o.Hints = c.Hints()
	return o
}

// StoredOutlet is an outlet's request and secret as the read model
// keeps them, read as either form it may hold: Sealed, the header values
// of request and the secret are hints (what the events since sealing
// carry); not sealed, they are in clear (an outlet created or last
// changed before, whose events carry them so). Outlet reads either.
type StoredOutlet struct {
	Request Request
	Secret  string
	Sealed  *SealedCredentials
}

// Outlet fills in o's request and hints from what is stored, and drops
// any value held in clear: what the read model answers never holds one.
func (s StoredOutlet) Outlet(o Outlet) Outlet {
	hints := Credentials{Secret: s.Secret, Headers: s.Request.Headers}
	if s.Sealed == nil {
		hints = hints.Hints()
	}
	o.Request, o.Secret, o.Hints = s.Request, "", hints
	o.Request.Headers = nil
	return o
}

// Open returns o with its credentials in clear: opened with sealer when
// stored sealed, as stored otherwise (the deliverer's read). A nil sealer
// opens nothing: o then holds the hints only (Outlet), for whoever
// needs no credential (an admin's rewind or deletion).
func (s StoredOutlet) Open(o Outlet, sealer Sealer) (Outlet, error) {
	if sealer == nil {
		return s.Outlet(o), nil
	}
	o.Request = s.Request
	c := Credentials{Secret: s.Secret, Headers: s.Request.Headers}
	if s.Sealed != nil {
		var err error
		if c, err = s.Sealed.Open(sealer, o.ID); err != nil {
			return o, err
		}
	}
	return o.WithCredentials(c), nil
}
