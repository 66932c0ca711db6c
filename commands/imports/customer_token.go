package imports

import (
	"crypto/rand"
	"encoding/base32"
	"strings"
)

// tokenEncoding writes tokens: base32's RFC 4648 alphabet without padding.
var tokenEncoding = base32.StdEncoding.WithPadding(base32.NoPadding)

// NewCustomerToken returns a new customer tracking token (customer_token,
// docs/customers.md): 128 bits from crypto/rand in 26 characters of
// lower-case base32 (a-z and 2-7), so nothing about the person can be
// read from it or guessed from another token. Base32 rather than base64
// because the token travels in URLs, cookies and the systems of clients
// that may fold case or treat "-" and "_" as separators: it has neither
// punctuation nor meaning in its case, and lower case reads as the
// identifier it is. It is unlike the customer's id (32 hex digits), so
// the two are not confused.
func NewCustomerToken() string {
	var b [16]byte
	rand.Read(b[:]) // never fails: a broken random source stops the program
	return strings.ToLower(tokenEncoding.EncodeToString(b[:]))
}
