package customer

import (
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
