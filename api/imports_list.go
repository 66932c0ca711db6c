package api

import (
	"net/http"
	"net/url"

	"github.com/gin-gonic/gin"

	"github.com/clientele/clientele/readmodels"
)

// importsListParams are the query parameters of GET /api/imports/ (and
// the token's, access-token); any other is 400: a filter the list does
// not have would otherwise answer every run.
var importsListParams = []string{"limit", "cursor", "from"}

// handleListImports serves GET /api/imports/ (our addition): the
// company's import runs, newest first, each as GET /api/imports/<id>/
// answers it without its warnings and rejections, paged with limit
// (default 100, at most 10,000) and cursor (next_url). Who may read is
// GET /api/imports/<id>/'s rule: any principal of the company whose
// scopes allow the path. The console's imports page reads the same
// method (readmodels.Imports.Runs).
func (s *Server) handleListImports(c *gin.Context) error {
	limit, before, err := importsListQuery(c.Request.URL)
	if err != nil {
		return err
	}
	p, _ := principalOf(c)
	runs, next, err := s.imports.Runs(c.Request.Context(), p.CompanyID, before, limit)
	if err != nil {
		return err
	}
	list := make([]importRunJSON, 0, len(runs))
	for _, run := range runs {
		list = append(list, newImportRunJSON(run))
	}
	body := gin.H{"imports": list}
	if next != "" {
		body["next_url"] = nextURL(c.Request, encodeCursor(next))
	}
	c.JSON(http.StatusOK, body)
	return nil
}

// importsListQuery reads limit and cursor (or its other name, from).
func importsListQuery(u *url.URL) (limit int, before string, err error) {
	params, err := onlyParams(u, importsListParams)
	if err != nil {
		return 0, "", err
	}
	if limit, err = limitParam(params, readmodels.DefaultLimit, readmodels.MaxLimit); err != nil {
		return 0, "", err
	}
	before, err = cursorParam(params)
	return limit, before, err
}
