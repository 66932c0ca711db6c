package company

import "github.com/clientele/clientele/domain"

// Stream is a company's stream, "company-<company>-<company>": named as
// every aggregate's stream is, a company being its own company.
func Stream(companyID string) string {
	return domain.StreamID("company", companyID, companyID)
}

// SlugStream is the reservation stream of a slug, "companyslug-<slug>".
// Reservation streams make a value unique (creating one expects no stream
// yet) and are named after the value alone.
func SlugStream(slug string) string { return "companyslug-" + slug }

// DomainStream is the reservation stream of a custom domain,
// "companydomain-<host>".
func DomainStream(host string) string { return "companydomain-" + host }
