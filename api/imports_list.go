package api

import (
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/clientele/clientele/domain"
	"github.com/clientele/clientele/domain/values"
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
	params, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return 0, "", domain.Errorf(domain.Invalid, "the query string is malformed: %v", err)
	}
	for _, name := range slices.Sorted(maps.Keys(params)) {
		if slices.Contains(importsListParams, name) || name == "access-token" {
			continue
		}
		known := strings.Join(importsListParams, ", ")
		if f := values.SafeName(name); f != "" {
			return 0, "", invalidParam(f, "is not a parameter of this endpoint (%s)", known)
		}
		return 0, "", domain.Errorf(domain.Invalid, "the query has a parameter that is none of this endpoint's (%s)", known)
	}
	if limit, err = limitParam(params, readmodels.DefaultLimit, readmodels.MaxLimit); err != nil {
		return 0, "", err
	}
	for _, name := range []string{"cursor", "from"} {
		if v := params.Get(name); v != "" {
			if before, err = decodeCursor(v); err != nil || before == "" {
				return 0, "", invalidParam(name, "is not a cursor of this endpoint; follow next_url")
			}
		}
	}
	return limit, before, nil
}
