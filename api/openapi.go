package api

import (
	"fmt"
	"net/http"
	"sync"

	"github.com/gin-gonic/gin"
	"github.com/goccy/go-yaml"

	"github.com/clientele/clientele/docs"
)

// openAPIJSON converts docs/openapi.yaml to JSON for clients that read no
// YAML, once a process: the document is built in, the same for every
// server, and its conversion took 70 ms of CPU (more under -race) each
// time a server was built.
var openAPIJSON = sync.OnceValues(func() ([]byte, error) {
	b, err := yaml.YAMLToJSON(docs.OpenAPI)
	if err != nil {
		return nil, fmt.Errorf("api: docs/openapi.yaml: %w", err)
	}
	return b, nil
})

// handleOpenAPIYAML serves GET /api/openapi.yaml: the API reference.
func (s *Server) handleOpenAPIYAML(c *gin.Context) error {
	c.Data(http.StatusOK, "application/yaml; charset=utf-8", docs.OpenAPI)
	return nil
}

// handleOpenAPIJSON serves GET /api/openapi.json: the API reference as
// JSON.
func (s *Server) handleOpenAPIJSON(c *gin.Context) error {
	c.Data(http.StatusOK, "application/json; charset=utf-8", s.docsJSON)
	return nil
}
