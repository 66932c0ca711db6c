package activity

import (
	"reflect"
	"strings"

	"github.com/clientele/clientele/domain/values"
)

// integer reads a whole number from a JSON number or a string (CSV):
// 7, "7", 7.0 and "7.0" are 7; 7.5 is none. It is read exactly, so that a
// large id is not rounded through a float.
func integer(v any) (int64, bool) {
	r, ok := values.Decimal(v)
	if !ok || !r.IsInt() || !r.Num().IsInt64() {
		return 0, false
	}
	return r.Num().Int64(), true
}

// sameValue reports whether two values of one field are the same: the
// same text for strings and numbers (a number and its text are one
// value, as everywhere in imports), else equal.
func sameValue(a, b any) bool {
	sa, okA := values.Scalar(a)
	sb, okB := values.Scalar(b)
	if okA && okB {
		return strings.TrimSpace(sa) == strings.TrimSpace(sb)
	}
	return reflect.DeepEqual(a, b)
}
