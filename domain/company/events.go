package company

import "time"

// Event type names, as stored in the event log. They are durable: never
// rename one.
const (
	CreatedType         = "CompanyCreated"
	SettingsChangedType = "CompanySettingsChanged"
	SlugReservedType    = "CompanySlugReserved"
	DomainClaimedType   = "CompanyDomainClaimed"
	DomainReleasedType  = "CompanyDomainReleased"
)

// SettingsData is the JSON form of Settings in events.
type SettingsData struct {
	Name             string   `json:"name"`
	Timezone         string   `json:"timezone"`
	Currency         string   `json:"currency"`
	ShortName        string   `json:"short_name"`
	Domains          []string `json:"domains"`
	CustomEventTypes []string `json:"custom_event_types"`
	// ExchangeRates is absent from events written before it existed.
	ExchangeRates map[string]string `json:"exchange_rates,omitempty"`
	// PhoneRegion is absent when "", as in events written before it
	// existed.
	PhoneRegion string `json:"phone_region,omitempty"`
}

func settingsData(c Company) SettingsData {
	s := c.Settings()
	if s.Domains == nil {
		s.Domains = []string{}
	}
	if s.CustomEventTypes == nil {
		s.CustomEventTypes = []string{}
	}
	return SettingsData(s)
}

// Created starts a company's stream.
type Created struct {
	ID   string `json:"id"`
	Slug string `json:"slug"`
	SettingsData
	CreatedAt time.Time `json:"created_at"`
}

// NewCreated returns the event that records c.
func NewCreated(c Company) Created {
	return Created{ID: c.ID, Slug: c.Slug, SettingsData: settingsData(c), CreatedAt: c.CreatedAt}
}

// Company returns the company the event creates.
func (e Created) Company() Company {
	c := Company{ID: e.ID, Slug: e.Slug, CreatedAt: e.CreatedAt}
	c.applyData(e.SettingsData)
	return c
}

// SettingsChanged records a change of settings. It carries every setting
// after the change (so a reader needs no earlier event) and the names of
// the settings that changed.
type SettingsChanged struct {
	ID string `json:"id"`
	SettingsData
	Changed   []string  `json:"changed"`
	ChangedAt time.Time `json:"changed_at"`
}

// NewSettingsChanged returns the event that records the change of c's
// settings to their current values.
func NewSettingsChanged(c Company, changed []string, now time.Time) SettingsChanged {
	return SettingsChanged{ID: c.ID, SettingsData: settingsData(c), Changed: changed, ChangedAt: now.UTC()}
}

// Apply returns c with the settings of the event.
func (e SettingsChanged) Apply(c Company) Company {
	c.applyData(e.SettingsData)
	return c
}

func (c *Company) applyData(d SettingsData) {
	c.apply(Settings(d))
}

// SlugReserved claims a slug for a company, for ever. It is the only event
// of the slug's reservation stream, which makes slugs unique.
type SlugReserved struct {
	Slug      string `json:"slug"`
	CompanyID string `json:"company_id"`
}

// DomainClaimed and DomainReleased alternate in a custom domain's
// reservation stream: the domain belongs to the company of the last claim
// unless a release follows it.
type DomainClaimed struct {
	Domain    string `json:"domain"`
	CompanyID string `json:"company_id"`
}

// DomainReleased gives up a custom domain; see DomainClaimed.
type DomainReleased struct {
	Domain    string `json:"domain"`
	CompanyID string `json:"company_id"`
}
