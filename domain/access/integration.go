package access

import (
	"strings"
	"time"
	"unicode/utf8"

	"github.com/clientele/clientele/domain"
)

// Integration is an external system (a shop, an ERP connector) that owns
// access tokens.
type Integration struct {
	ID        string
	CompanyID string
	// Name is the integration's parameters.name.
	Name string
	// IntegrationName names the kind of integration; it may be empty.
	IntegrationName string
	Description     string
	Enabled         bool
	CreatedAt       time.Time
	// CreatedBy is the creator's owner id or "system".
	CreatedBy string
}

const (
	maxName        = 200
	maxDescription = 2000
)

// MayCreateIntegration decides who creates integrations: admins.
func MayCreateIntegration(p Principal) error {
	if p.HasRole(RoleAdmin) {
		return nil
	}
	return domain.Errorf(domain.Forbidden, "creating an integration requires the admin role")
}

// NewIntegration decides whether p may create an integration (it needs the
// admin role) and returns it, enabled. An empty name falls back to the
// integration name; one of them is required.
func NewIntegration(p Principal, id, integrationName, name, description string, now time.Time) (Integration, error) {
	if err := MayCreateIntegration(p); err != nil {
		return Integration{}, err
	}
	integrationName = strings.TrimSpace(integrationName)
	name = strings.TrimSpace(name)
	if name == "" {
		name = integrationName
	}
	var problems []domain.FieldError
	if name == "" {
		problems = append(problems, domain.FieldError{Field: "parameters.name", Reason: "required"})
	}
	if utf8.RuneCountInString(name) > maxName {
		problems = append(problems, domain.FieldError{Field: "parameters.name", Reason: "too long"})
	}
	if utf8.RuneCountInString(integrationName) > maxName {
		problems = append(problems, domain.FieldError{Field: "integration_name", Reason: "too long"})
	}
	if utf8.RuneCountInString(description) > maxDescription {
		problems = append(problems, domain.FieldError{Field: "parameters.description", Reason: "too long"})
	}
	if len(problems) > 0 {
		return Integration{}, &domain.Error{Code: domain.Validation, Message: "invalid integration", Details: problems}
	}
	return Integration{
		ID:              id,
		CompanyID:       p.CompanyID,
		Name:            name,
		IntegrationName: integrationName,
		Description:     description,
		Enabled:         true,
		CreatedAt:       now.UTC(),
		CreatedBy:       p.CreatedBy(),
	}, nil
}
