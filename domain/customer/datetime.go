package customer

import "github.com/clientele/clientele/domain/values"

// Normal forms of dates and datetimes in Changes.Set.
const (
	// DateLayout is the form of birth_date.
	DateLayout = values.DateLayout
	// DateTimeLayout is the form of date_joined and last_login: UTC with
	// Z, fractional seconds only when not zero, at most six digits (the
	// microseconds PostgreSQL keeps).
	DateTimeLayout = values.DateTimeLayout
)
