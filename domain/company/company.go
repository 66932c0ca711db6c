// Package company is the tenant aggregate: a company, its settings and the
// hosts that reach it.
package company

import "time"

// Company is a tenant. Every row, event and stream belongs to one.
type Company struct {
	// ID is the stable identifier used in stream names and rows.
	ID string
	// Slug is the first label of the company's host, <slug>.<base domain>.
	Slug string
	Name string
	// Domains are custom hosts registered for the company.
	Domains []string
	// Timezone is an IANA name; naive datetimes are read in it.
	Timezone string
	// Currency is the default ISO 4217 currency.
	Currency string
	// ShortName prefixes company-specific fields: <ShortName>__<field>.
	ShortName string
	// CustomEventTypes are event types the company defined in addition to
	// the built-in ones.
	CustomEventTypes []string
	CreatedAt        time.Time
}
