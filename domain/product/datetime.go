package product

import (
	"time"

	"github.com/clientele/clientele/domain/values"
)

// timeLocation is the company's timezone, in which naive datetimes are read.
type timeLocation = *time.Location

// DateTimeLayout is the stored form of date: UTC with Z, fractional
// seconds only when not zero.
const DateTimeLayout = values.DateTimeLayout

// dateTime accepts the datetime forms of the decisions; a naive one is
// read in loc, the company's timezone.
func dateTime(v any, loc timeLocation) (any, string) { return values.Any(values.DateTime(v, loc)) }
