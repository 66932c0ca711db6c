package api

import (
	"encoding/json"
	"errors"
	"maps"
	"net/http"
	"slices"

	"github.com/gin-gonic/gin"

	"github.com/clientele/clientele/commands"
	"github.com/clientele/clientele/domain"
	"github.com/clientele/clientele/domain/access"
)

// createIntegrationRequest is the body of POST /api/integrations/. The
// legacy body {"name": "...", "description": "..."} is read too.
type createIntegrationRequest struct {
	IntegrationName string                `json:"integration_name"`
	Parameters      integrationParameters `json:"parameters"`
	Name            string                `json:"name"`
	Description     string                `json:"description"`
}

type integrationParameters struct {
	Name        string `json:"name"`
	Description string `json:"description"`
}

// integrationJSON is an integration as answered. The datasource and
// datatarget lists and the configuration are always empty: Clientele has
// no built-in datasources, and datatargets are a resource of their own.
type integrationJSON struct {
	ID                   string                `json:"id"`
	Name                 string                `json:"name"`
	IntegrationName      string                `json:"integration_name"`
	Enabled              bool                  `json:"enabled"`
	AvailableDatasources []string              `json:"available_datasources"`
	CreatedAt            string                `json:"created_at"`
	Datasources          []map[string]any      `json:"datasources"`
	Datatargets          []map[string]any      `json:"datatargets"`
	DatatargetTemplates  []map[string]any      `json:"datatarget_templates"`
	Description          string                `json:"description"`
	Configuration        map[string]any        `json:"configuration"`
	Parameters           integrationParameters `json:"parameters"`
}

func newIntegrationJSON(i access.Integration) integrationJSON {
	return integrationJSON{
		ID:                   i.ID,
		Name:                 i.Name,
		IntegrationName:      i.IntegrationName,
		Enabled:              i.Enabled,
		AvailableDatasources: []string{},
		CreatedAt:            timestampMicros(i.CreatedAt),
		Datasources:          []map[string]any{},
		Datatargets:          []map[string]any{},
		DatatargetTemplates:  []map[string]any{},
		Description:          i.Description,
		Configuration:        map[string]any{},
		Parameters:           integrationParameters{Name: i.Name, Description: i.Description},
	}
}

// handleCreateIntegration serves POST /api/integrations/: it creates an
// integration (admin role), to which tokens can then be given.
func (s *Server) handleCreateIntegration(c *gin.Context) error {
	var raw json.RawMessage
	if err := decodeJSON(c.Request, &raw, false); err != nil {
		return err
	}
	var req createIntegrationRequest
	if err := json.Unmarshal(raw, &req); err != nil {
		return domain.JSONDecodeError(err)
	}
	name, description := req.Parameters.Name, req.Parameters.Description
	if name == "" && description == "" {
		name, description = req.Name, req.Description
	}
	p, _ := principalOf(c)
	in, err := s.commands.CreateIntegration.Handle(commandContext(c), commands.CreateIntegration{
		Principal:       p,
		IntegrationName: req.IntegrationName,
		Name:            name,
		Description:     description,
	})
	if err != nil {
		return withUnknownIntegrationFields(err, raw)
	}
	c.JSON(http.StatusOK, gin.H{"integration": newIntegrationJSON(in)})
	return nil
}

// withUnknownIntegrationFields adds to a refusal the body's fields that
// are no field of an integration, which were ignored: {"nme": "shop"} is
// refused for its missing name, and the answer says that nme was no name.
func withUnknownIntegrationFields(err error, raw json.RawMessage) error {
	var de *domain.Error
	var fields map[string]json.RawMessage
	if !errors.As(err, &de) || de.Code != domain.Validation || json.Unmarshal(raw, &fields) != nil {
		return err
	}
	out := *de
	out.Details = slices.Clone(de.Details)
	for _, k := range slices.Sorted(maps.Keys(fields)) {
		switch k {
		case "integration_name", "parameters", "name", "description":
			continue
		}
		out.Details = append(out.Details, domain.FieldError{Field: k,
			Reason: "is not a field of an integration, and was ignored (its fields: integration_name, parameters.name, parameters.description)"})
	}
	return &out
}

// handleListIntegrations serves GET /api/integrations/ (our addition):
// every integration of the company, oldest first.
func (s *Server) handleListIntegrations(c *gin.Context) error {
	p, _ := principalOf(c)
	if err := access.MayReadIntegrations(p); err != nil {
		return err
	}
	list, err := s.access.Integrations(c.Request.Context(), p.CompanyID)
	if err != nil {
		return err
	}
	out := make([]integrationJSON, 0, len(list))
	for _, in := range list {
		out = append(out, newIntegrationJSON(in))
	}
	c.JSON(http.StatusOK, gin.H{"integrations": out})
	return nil
}

// handleGetIntegration serves GET /api/integrations/<id>/ (our addition).
func (s *Server) handleGetIntegration(c *gin.Context) error {
	p, _ := principalOf(c)
	id := c.Param("id")
	if err := access.MayReadIntegration(p, id); err != nil {
		return err
	}
	in, err := s.access.Integration(c.Request.Context(), p.CompanyID, id)
	if err != nil {
		return err
	}
	c.JSON(http.StatusOK, gin.H{"integration": newIntegrationJSON(in)})
	return nil
}
