// Package docs holds Clientele's documentation that the service itself
// serves: the OpenAPI description of the HTTP API.
package docs

import _ "embed"

// OpenAPI is docs/openapi.yaml, the OpenAPI 3.0.3 description of the HTTP
// API, served at /api/openapi.yaml.
//
//go:embed openapi.yaml
var OpenAPI []byte
