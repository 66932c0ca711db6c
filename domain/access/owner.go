package access

import (
	"strings"

	"github.com/clientele/clientele/domain"
)

// OwnerKind is what owns an access token.
type OwnerKind string

// Owner kinds, as they appear in owner_id.
const (
	OwnerUser        OwnerKind = "users"
	OwnerIntegration OwnerKind = "integrations"
)

// Owner is a parsed owner_id: "users/<id>" or "integrations/<id>".
type Owner struct {
	Kind OwnerKind
	ID   string
}

// String formats the owner as an owner_id.
func (o Owner) String() string { return string(o.Kind) + "/" + o.ID }

// UserOwner returns the owner_id of a user.
func UserOwner(userID string) string { return string(OwnerUser) + "/" + userID }

// IntegrationOwner returns the owner_id of an integration.
func IntegrationOwner(integrationID string) string {
	return string(OwnerIntegration) + "/" + integrationID
}

// ParseOwnerID parses "users/<id>" or "integrations/<id>". A trailing
// slash is tolerated ("integrations/<id>/").
func ParseOwnerID(s string) (Owner, error) {
	kind, id, ok := strings.Cut(strings.TrimSuffix(strings.TrimSpace(s), "/"), "/")
	if !ok || id == "" || strings.ContainsAny(id, "/ \t") {
		return Owner{}, domain.Errorf(domain.Validation, "owner_id %q must be users/<id> or integrations/<id>", s)
	}
	switch OwnerKind(kind) {
	case OwnerUser, OwnerIntegration:
		return Owner{Kind: OwnerKind(kind), ID: id}, nil
	}
	return Owner{}, domain.Errorf(domain.Validation, "owner_id %q must be users/<id> or integrations/<id>", s)
}
