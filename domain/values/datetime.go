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

// Years PostgreSQL and the stored forms hold: a date or timestamp of year
// 0 or 10000 cannot be written in four digits (Go prints 10000-01-01,
// which nothing parses back), and PostgreSQL has no year 0.
const (
	MinYear = 1
	MaxYear = 9999
)

// Reasons for dates and datetimes outside MinYear to MaxYear.
const (
	ReasonDateRange     = "must be a date from 0001-01-01 to 9999-12-31"
	ReasonDateTimeRange = "must be a datetime from 0001-01-01T00:00:00Z to 9999-12-31T23:59:59.999999Z once converted to UTC (mind the offset or the company's timezone near those limits)"
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
	t, err := time.Parse(DateLayout, s)
	if err != nil {
		return "", reason
	}
	if !inYears(t) {
		return "", ReasonDateRange
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
	// The stored form is UTC: an offset or the company's timezone can
	// move a datetime near a limit over it (9999-12-31T23:30:00-01:00).
	if t = t.UTC(); !inYears(t) {
		return "", ReasonDateTimeRange
	}
	return t.Format(DateTimeLayout), ""
}

func inYears(t time.Time) bool { return t.Year() >= MinYear && t.Year() <= MaxYear }

// hasZone reports whether a datetime (its date part already checked for
// length) ends with Z or ±hh:mm.
func hasZone(s string) bool {
	t := s[len(DateLayout):]
	if strings.HasSuffix(t, "Z") {
		return true
	}
	return len(t) >= 6 && (t[len(t)-6] == '+' || t[len(t)-6] == '-') && t[len(t)-3] == ':'
}
