// Package secret holds the credential primitives: password hashing
// (argon2id), token hashing (SHA-256) and TOTP (RFC 6238). It keeps the
// choice of algorithms and parameters in one place.
package secret

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"sync"
	"time"

	"github.com/alexedwards/argon2id"
	"github.com/pquerna/otp"
	"github.com/pquerna/otp/hotp"
	"github.com/pquerna/otp/totp"
)

// PasswordParams are the argon2id parameters of new hashes: the library's
// defaults (64 MiB, one pass, a 16-byte salt), above OWASP's minimum
// (46 MiB, one pass). Each hash records its own parameters, so changing
// these affects only new hashes.
var PasswordParams = argon2id.DefaultParams

// HashPassword returns an argon2id hash of password in PHC string format.
func HashPassword(password string) (string, error) {
	h, err := argon2id.CreateHash(password, PasswordParams)
	if err != nil {
		return "", fmt.Errorf("secret: hash password: %w", err)
	}
	return h, nil
}

// dummy is the hash that an unknown user's password is checked against.
// It is made with the current PasswordParams (and made again if they
// change), so that checking it costs what checking a new user's hash
// costs: the same memory, the same time.
var dummy struct {
	sync.Mutex
	params argon2id.Params
	hash   string
}

func dummyHash() string {
	dummy.Lock()
	defer dummy.Unlock()
	if dummy.hash == "" || dummy.params != *PasswordParams {
		dummy.hash, _ = argon2id.CreateHash("no such user", PasswordParams)
		dummy.params = *PasswordParams
	}
	return dummy.hash
}

// CheckPassword reports whether password matches hash. An empty or
// malformed hash never matches, but costs as much as a real one, so that
// the time taken does not reveal whether a user exists.
//
// Each check holds PasswordParams.Memory (64 MiB) while it runs: callers
// that serve untrusted requests must bound how many run at once (the API
// does, see api.Config.PasswordChecks).
func CheckPassword(password, hash string) bool {
	if hash == "" {
		_, _ = argon2id.ComparePasswordAndHash(password, dummyHash())
		return false
	}
	ok, err := argon2id.ComparePasswordAndHash(password, hash)
	return err == nil && ok
}

// HashToken returns the hex SHA-256 of a token value, the only form in
// which a token is stored. Token values are long and random, so a fast
// hash is enough (no salt, no stretching) and lookups stay indexable.
func HashToken(value string) string {
	sum := sha256.Sum256([]byte(value))
	return hex.EncodeToString(sum[:])
}

// TOTP settings: six digits, 30 seconds, SHA-1, as every authenticator app
// expects.
const (
	totpPeriod = 30
	totpSkew   = 1 // accept the previous and the next code too
)

// NewTOTP generates a TOTP secret for account (shown in authenticator
// apps under issuer) and returns the base32 secret and its otpauth:// URI.
func NewTOTP(issuer, account string) (secret, uri string, err error) {
	key, err := totp.Generate(totp.GenerateOpts{
		Issuer: issuer, AccountName: account, Period: totpPeriod,
		Digits: otp.DigitsSix, Algorithm: otp.AlgorithmSHA1,
	})
	if err != nil {
		return "", "", fmt.Errorf("secret: generate TOTP key: %w", err)
	}
	return key.Secret(), key.URL(), nil
}

// TOTPStep returns the time step (Unix time / 30 s) whose code is code
// for secret at time now, allowing one step of clock drift either way,
// and false when code matches none. Callers accept a step only once: a
// code seen on the wire must not open a second session (RFC 6238, 5.2).
func TOTPStep(code, secret string, now time.Time) (int64, bool) {
	if len(code) != otp.DigitsSix.Length() {
		return 0, false
	}
	opts := hotp.ValidateOpts{Digits: otp.DigitsSix, Algorithm: otp.AlgorithmSHA1}
	current := now.Unix() / totpPeriod
	// Every candidate is computed and compared in constant time, so the
	// time taken does not say which step matched, if any.
	var step int64
	matched := false
	for s := current - totpSkew; s <= current+totpSkew; s++ {
		want, err := hotp.GenerateCodeCustom(secret, uint64(s), opts)
		if err != nil {
			return 0, false
		}
		if subtle.ConstantTimeCompare([]byte(want), []byte(code)) == 1 {
			step, matched = s, true
		}
	}
	return step, matched
}
