package values

import (
	"strings"
	"time"
)

// Normal forms of dates and datetimes.
const (
	// DateLayout is the form of dates (a birth date).
	DateLayout = "2006-01-02"
	// DateTimeLayout is the stored form of datetimes: UTC with Z,
	// fractional seconds only when not zero, at most six digits (the
	// microseconds PostgreSQL keeps).
	DateTimeLayout = "2006-01-02T15:04:05.999999Z"
)

// Date accepts YYYY-MM-DD only: a date such as a birth date has no time
// and no zone, and reading one from a datetime would shift it across a day
// boundary.
func Date(v any) (string, string) {
	const reason = "must be a date YYYY-MM-DD"
	s, ok := v.(string)
	s = strings.TrimSpace(s)
	if !ok || len(s) != len(DateLayout) {
		return "", reason
	}
	if _, err := time.Parse(DateLayout, s); err != nil {
		return "", reason
	}
	return s, ""
}

// DateTime accepts the forms of the decisions: YYYY-MM-DD,
// YYYY-MM-DDThh:mm:ss[.ffffff] or the same with a space for the T, with
// Z, ±hh:mm or no zone. A date is midnight and a datetime without zone is
// read in loc, the company's timezone. The result is in DateTimeLayout.
func DateTime(v any, loc *time.Location) (string, string) {
	const reason = "must be a date YYYY-MM-DD or a datetime YYYY-MM-DDThh:mm:ss with optional fraction and zone (Z or ±hh:mm)"
	s, ok := v.(string)
	s = strings.TrimSpace(s)
	if !ok || len(s) < len(DateLayout) {
		return "", reason
	}
	var t time.Time
	var err error
	switch {
	case len(s) == len(DateLayout):
		t, err = time.ParseInLocation(DateLayout, s, loc)
	case s[10] != 'T' && s[10] != ' ':
		return "", reason
	default:
		s = s[:10] + "T" + s[11:]
		if hasZone(s) {
			// Parsing accepts a fraction after the seconds even when the
			// layout has none.
			t, err = time.Parse("2006-01-02T15:04:05Z07:00", s)
		} else {
			t, err = time.ParseInLocation("2006-01-02T15:04:05", s, loc)
		}
	}
	if err != nil {
		return "", reason
	}
	return t.UTC().Format(DateTimeLayout), ""
}

// hasZone reports whether a datetime (its date part already checked for
// length) ends with Z or ±hh:mm.
func hasZone(s string) bool {
	t := s[len(DateLayout):]
	if strings.HasSuffix(t, "Z") {
		return true
	}
	return len(t) >= 6 && (t[len(t)-6] == '+' || t[len(t)-6] == '-') && t[len(t)-3] == ':'
}
