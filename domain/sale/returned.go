package sale

import "strings"

// ReturnedTag is the row tag of a returned row: the interface reports a
// return by uploading the row again with unit_price 0 and this tag
// (docs/sales.md, States, cancellation, returns, deletion).
const ReturnedTag = "CANCELLED"

// Returned reports whether a row with these tags was returned. The tag is
// matched in any case, as sale_state is: "cancelled" means the same.
func Returned(tags []string) bool {
	for _, t := range tags {
		if strings.EqualFold(strings.TrimSpace(t), ReturnedTag) {
			return true
		}
	}
	return false
}
