package segment

import (
	"encoding/json"
	"strconv"
	"strings"
	"time"
)

// The readings of a leaf's values as Decide makes them, for a reader
// that decides rules elsewhere (the preview's SQL, readmodels) and must
// read them the same way.

// Instant reads a date or datetime as a leaf compares it: a date
// (2026-03-01, midnight UTC) or a datetime (RFC 3339, or without a zone
// taken as UTC).
func Instant(s string) (time.Time, bool) {
	return instant(s)
}

// Number reads a number as a leaf compares it: by its value as a double;
// ok is false when it is none (out of a double's range), and then it
// equals nothing and orders against nothing.
func Number(n json.Number) (float64, bool) {
	f, err := strconv.ParseFloat(n.String(), 64)
	return f, err == nil
}

// Fold is the case folding of contains on a string: a field's value
// holds the leaf's when Fold of one holds Fold of the other.
func Fold(s string) string {
	return strings.ToLower(s)
}

// Day is the length of a window's day (within_days, an event's or a
// sale's within_days): 24 hours, whatever the time zone.
const Day = day
