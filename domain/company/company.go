// Package company is the tenant aggregate: a company, its settings and the
// hosts that reach it.
package company

import (
	"maps"
	"net"
	"regexp"
	"slices"
	"strings"
	"time"
	_ "time/tzdata" // validate time zones the same way on every machine
	"unicode/utf8"

	"github.com/nyaruka/phonenumbers"

	"github.com/clientele/clientele/domain"
	"github.com/clientele/clientele/domain/values"
)

// Company is a tenant. Every row, event and stream belongs to one.
type Company struct {
	// ID is the stable identifier used in stream names and rows.
	ID string
	// Slug is the first label of the company's host, <slug>.<base domain>.
	// It never changes.
	Slug string
	Name string
	// Domains are custom hosts registered for the company, lower-case.
	Domains []string
	// Timezone is an IANA name; naive datetimes are read in it.
	Timezone string
	// Currency is the default ISO 4217 currency.
	Currency string
	// PhoneRegion is the ISO 3166-1 alpha-2 country whose national phone
	// numbers the company's records carry ("040 987 6543"): a number
	// without + is read in it when its record names no country. "" (the
	// default) accepts international numbers only, since the country of
	// a national number would be a guess.
	PhoneRegion string
	// ShortName prefixes company-specific fields: <ShortName>__<field>.
	ShortName string
	// CustomEventTypes are event types the company defined in addition to
	// the built-in ones.
	CustomEventTypes []string
	// ExchangeRates converts sales in other currencies: by ISO 4217 code,
	// the rate from that currency to Currency as a decimal string
	// (default-currency amount = amount in that currency / rate). Codes
	// are upper-case, rates canonical (NormalizeRate); nil when empty.
	ExchangeRates map[string]string
	CreatedAt     time.Time
}

// Settings are the parts of a company its admins may change.
type Settings struct {
	Name             string
	Timezone         string
	Currency         string
	ShortName        string
	Domains          []string
	CustomEventTypes []string
	// ExchangeRates: see Company.ExchangeRates.
	ExchangeRates map[string]string
	// PhoneRegion: see Company.PhoneRegion.
	PhoneRegion string
}

// Settings returns the company's current settings.
func (c Company) Settings() Settings {
	return Settings{
		Name: c.Name, Timezone: c.Timezone, Currency: c.Currency, ShortName: c.ShortName,
		Domains: slices.Clone(c.Domains), CustomEventTypes: slices.Clone(c.CustomEventTypes),
		ExchangeRates: maps.Clone(c.ExchangeRates), PhoneRegion: c.PhoneRegion,
	}
}

// Location returns the company's time zone.
func (c Company) Location() *time.Location {
	if loc, err := time.LoadLocation(c.Timezone); err == nil {
		return loc
	}
	return time.UTC
}

// Defaults for settings left empty at creation.
const (
	DefaultTimezone = "UTC"
	DefaultCurrency = "EUR"
)

var (
	slugRE      = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,62}$`)
	currencyRE  = regexp.MustCompile(`^[A-Z]{3}$`)
	shortNameRE = regexp.MustCompile(`^[A-Z0-9]{1,32}$`)
	eventTypeRE = regexp.MustCompile(`^[A-Z][A-Z0-9]*(_[A-Z0-9]+)*$`)
	labelRE     = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)
)

// NormalizeSlug lower-cases a slug and checks it: a letter or digit, then
// up to 62 letters, digits or hyphens (one DNS label).
func NormalizeSlug(slug string) (string, error) {
	s := strings.ToLower(strings.TrimSpace(slug))
	if !slugRE.MatchString(s) {
		return "", domain.Errorf(domain.Validation, "invalid slug %q: lower-case letters, digits and hyphens, starting with a letter or digit, at most 63", slug)
	}
	return s, nil
}

// ShortNameFromSlug derives the default short name: the slug upper-cased
// without hyphens, at most 32 characters.
func ShortNameFromSlug(slug string) string {
	s := strings.ToUpper(strings.ReplaceAll(slug, "-", ""))
	if len(s) > 32 {
		s = s[:32]
	}
	return s
}

// New validates a new company. An empty timezone is UTC, an empty currency
// EUR and an empty short name is derived from the slug.
func New(id, slug string, s Settings, now time.Time) (Company, error) {
	slug, err := NormalizeSlug(slug)
	if err != nil {
		return Company{}, err
	}
	if s.Timezone == "" {
		s.Timezone = DefaultTimezone
	}
	if s.Currency == "" {
		s.Currency = DefaultCurrency
	}
	if s.ShortName == "" {
		s.ShortName = ShortNameFromSlug(slug)
	}
	s, err = s.validate()
	if err != nil {
		return Company{}, err
	}
	c := Company{ID: id, Slug: slug, CreatedAt: now.UTC()}
	c.apply(s)
	return c, nil
}

func (c *Company) apply(s Settings) {
	c.Name, c.Timezone, c.Currency, c.ShortName = s.Name, s.Timezone, s.Currency, s.ShortName
	c.Domains, c.CustomEventTypes = s.Domains, s.CustomEventTypes
	c.ExchangeRates = maps.Clone(s.ExchangeRates)
	c.PhoneRegion = s.PhoneRegion
}

// SettingsChange is a partial change of settings: nil fields stay as they
// are. An empty, non-nil list clears the list.
type SettingsChange struct {
	Name             *string
	Timezone         *string
	Currency         *string
	ShortName        *string
	Domains          *[]string
	CustomEventTypes *[]string
	// ExchangeRates changes single rates of the table, which is merged
	// rather than replaced (clients set one rate at a time): by currency
	// code, a rate as a decimal string sets that currency's rate, nil
	// removes it; currencies not named stay as they are.
	ExchangeRates map[string]*string
	// PhoneRegion: "" removes it.
	PhoneRegion *string
}

// ChangeSettings applies ch and returns the changed company and the names
// of the settings whose value changed (empty when nothing did).
func (c Company) ChangeSettings(ch SettingsChange) (Company, []string, error) {
	s := c.Settings()
	if ch.Name != nil {
		s.Name = *ch.Name
	}
	if ch.Timezone != nil {
		s.Timezone = *ch.Timezone
	}
	if ch.Currency != nil {
		s.Currency = *ch.Currency
	}
	if ch.ShortName != nil {
		s.ShortName = *ch.ShortName
	}
	if ch.Domains != nil {
		s.Domains = *ch.Domains
	}
	if ch.CustomEventTypes != nil {
		s.CustomEventTypes = *ch.CustomEventTypes
	}
	if ch.PhoneRegion != nil {
		s.PhoneRegion = *ch.PhoneRegion
	}
	if ch.ExchangeRates != nil {
		rates, err := mergeRates(s.ExchangeRates, ch.ExchangeRates)
		if err != nil {
			return c, nil, err
		}
		s.ExchangeRates = rates
	}
	s, err := s.validate()
	if err != nil {
		return c, nil, err
	}
	old := c.Settings()
	var changed []string
	if s.Name != old.Name {
		changed = append(changed, "name")
	}
	if s.Timezone != old.Timezone {
		changed = append(changed, "timezone")
	}
	if s.Currency != old.Currency {
		changed = append(changed, "currency")
	}
	if s.ShortName != old.ShortName {
		changed = append(changed, "short_name")
	}
	if !slices.Equal(s.Domains, old.Domains) {
		changed = append(changed, "domains")
	}
	if !slices.Equal(s.CustomEventTypes, old.CustomEventTypes) {
		changed = append(changed, "custom_event_types")
	}
	if !maps.Equal(s.ExchangeRates, old.ExchangeRates) {
		changed = append(changed, "exchange_rates")
	}
	if s.PhoneRegion != old.PhoneRegion {
		changed = append(changed, "phone_region")
	}
	c.apply(s)
	return c, changed, nil
}

// validate checks every setting, reporting all problems at once, and
// returns them normalised (trimmed, case fixed, lists sorted without
// duplicates, rates canonical, an empty rate table nil).
func (s Settings) validate() (Settings, error) {
	var problems []domain.FieldError
	bad := func(field, reason string) {
		problems = append(problems, domain.FieldError{Field: field, Reason: reason})
	}
	s.Name = strings.TrimSpace(s.Name)
	if s.Name == "" {
		bad("name", "required")
	} else if utf8.RuneCountInString(s.Name) > 200 {
		bad("name", "at most 200 characters")
	}
	s.Timezone = strings.TrimSpace(s.Timezone)
	if s.Timezone == "" || s.Timezone == "Local" {
		bad("timezone", "an IANA time zone name is required, e.g. Europe/Helsinki")
	} else if _, err := time.LoadLocation(s.Timezone); err != nil {
		bad("timezone", "unknown time zone "+s.Timezone)
	}
	s.Currency = strings.ToUpper(strings.TrimSpace(s.Currency))
	if !currencyRE.MatchString(s.Currency) {
		bad("currency", "an ISO 4217 code of three letters is required, e.g. EUR")
	}
	s.ShortName = strings.ToUpper(strings.TrimSpace(s.ShortName))
	if !shortNameRE.MatchString(s.ShortName) {
		bad("short_name", "upper-case letters and digits, at most 32")
	}
	domains := make([]string, 0, len(s.Domains))
	for _, d := range s.Domains {
		h, err := NormalizeDomain(d)
		if err != nil {
			bad("domains", err.Error())
			continue
		}
		domains = append(domains, h)
	}
	slices.Sort(domains)
	s.Domains = slices.Compact(domains)
	types := make([]string, 0, len(s.CustomEventTypes))
	for _, t := range s.CustomEventTypes {
		t = strings.TrimSpace(t)
		if !eventTypeRE.MatchString(t) || len(t) > 64 {
			bad("custom_event_types", "not an UPPER_SNAKE event type: "+t)
			continue
		}
		types = append(types, t)
	}
	slices.Sort(types)
	s.CustomEventTypes = slices.Compact(types)
	s.ExchangeRates = validateRates(s.ExchangeRates, s.Currency, bad)
	if region, reason := phoneRegion(s.PhoneRegion); reason != "" {
		bad("phone_region", reason)
	} else {
		s.PhoneRegion = region
	}
	if len(problems) > 0 {
		return s, &domain.Error{Code: domain.Validation, Message: "invalid company settings", Details: problems}
	}
	return s, nil
}

// NormalizeDomain checks a custom domain, a host name of at least two
// labels (no port, no IP address), and returns it lower-cased without a
// trailing dot.
func NormalizeDomain(d string) (string, error) {
	h := strings.TrimSuffix(strings.ToLower(strings.TrimSpace(d)), ".")
	if h == "" || len(h) > 253 || net.ParseIP(h) != nil {
		return "", domain.Errorf(domain.Validation, "not a host name: %q", d)
	}
	labels := strings.Split(h, ".")
	if len(labels) < 2 {
		return "", domain.Errorf(domain.Validation, "not a fully qualified host name: %q", d)
	}
	for _, l := range labels {
		if !labelRE.MatchString(l) {
			return "", domain.Errorf(domain.Validation, "not a host name: %q", d)
		}
	}
	return h, nil
}

// phoneRegion checks a phone_region: "" (none), or an ISO 3166-1 alpha-2
// country in any case (aliases canonicalised, UK is GB) that has a
// telephone numbering plan, since its national numbers are read by one.
func phoneRegion(s string) (string, string) {
	if strings.TrimSpace(s) == "" {
		return "", ""
	}
	c, reason := values.Country(s)
	if reason != "" {
		return "", reason + ", or empty for international numbers only"
	}
	if phonenumbers.GetCountryCodeForRegion(c) == 0 {
		return "", "no telephone numbering plan is known for this country"
	}
	return c, ""
}
