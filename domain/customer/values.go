package customer

import (
	"maps"
	"strings"

	"github.com/clientele/clientele/domain/values"
)

// The reasons below describe the expected form only: a rejection is
// stored, and the value it refuses may be personal data.

// maxExternalID is the longest external_id, in characters.
const maxExternalID = 200

// externalID accepts 1 to 200 ASCII letters, digits and dashes: every
// record of an import has one, so a loop checks them, not a regexp.
func externalID(v any) (string, string) {
	s, ok := values.Scalar(v)
	s = strings.TrimSpace(s)
	if !ok || s == "" || len(s) > maxExternalID || strings.IndexFunc(s, notIDChar) >= 0 {
		return "", "must be letters, digits and dashes only, at most 200"
	}
	return s, ""
}

func notIDChar(r rune) bool {
	return !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || r == '-')
}

// GuestByEmail applies to the record m, whose customer id is under idField
// and whose email under emailField, the rule for an email address sent as
// the customer id: a customer's external_id, an event's customer_id or a
// sale's sale_customer_id (which are that external_id). WooCommerce
// exports a guest, a shopper without an account, with the billing email
// as external_id. An address is no external_id (letters, digits and
// dashes only), so the record is a guest's: it has no customer id, and
// its email finds or creates the customer, as for the "no customer id" of
// values.NoCustomerID. The address becomes the record's email when m
// gives none (absent, null or only spaces); an email given beside it
// wins. Any other invalid id is left for the id's own rule to refuse.
//
// It returns m itself when the id is no email address, else a changed
// copy: m is never changed.
func GuestByEmail(m map[string]any, idField, emailField string) map[string]any {
	id, ok := m[idField].(string)
	if !ok || strings.IndexByte(id, '@') < 0 {
		return m // no address: the common case costs no parse
	}
	addr, reason := values.Email(id)
	if reason != "" {
		return m
	}
	out := maps.Clone(m)
	delete(out, idField)
	if !Given(out[emailField]) {
		out[emailField] = addr
	}
	return out
}
