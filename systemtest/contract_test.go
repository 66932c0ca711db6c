package systemtest_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"

	"github.com/clientele/clientele/docs"
)

// The contract check: every answer e.do reads is validated against
// docs/openapi.yaml by kin-openapi's openapi3filter (status, headers and
// body of the documented response), and every request the server served
// (2xx) must have the parameters the document allows (a limit above its
// maximum, say), so the document and the server cannot drift apart
// unseen. Request bodies are not checked: the server reads them more
// leniently than the document describes them (a number where a string is
// documented is taken as its text). A test that asks
// outside the contract on purpose says so with outsideContract(reason).

// contractStats counts, over one run of the package, the answers checked
// and the answers a test opted out of; TestMain reports them.
var contractStats struct {
	validated, optedOut atomic.Int64
}

// contract is the loaded document and its router, built once.
var contract = sync.OnceValues(func() (*contractChecker, error) {
	doc, err := openapi3.NewLoader().LoadFromData(docs.OpenAPI)
	if err != nil {
		return nil, fmt.Errorf("docs/openapi.yaml: %w", err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		return nil, fmt.Errorf("docs/openapi.yaml: %w", err)
	}
	// The servers are the companies' hosts; the tests' server is one
	// address for all, told apart by the Host header. Route by path only.
	doc.Servers = nil
	router, err := gorillamux.NewRouter(doc)
	if err != nil {
		return nil, fmt.Errorf("docs/openapi.yaml: router: %w", err)
	}
	return &contractChecker{router: router}, nil
})

type contractChecker struct {
	router routers.Router
}

// outsideContract marks a request whose answer is not checked against
// docs/openapi.yaml, because the test asks outside the document on
// purpose (an undocumented path or method, say); reason says why.
func outsideContract(reason string) option {
	if strings.TrimSpace(reason) == "" {
		panic("outsideContract needs a reason")
	}
	return func(r *request) { r.outsideContract = reason }
}

// canonicalPaths are the spellings of path the document may list it
// under: the server answers every /api path with and without the /api
// prefix and the trailing slash; the document lists /api/.../.
func canonicalPaths(path string) []string {
	base := strings.TrimSuffix(path, "/")
	if !strings.HasPrefix(base, "/api/") && base != "/api" {
		base = "/api" + base
	}
	return []string{path, base + "/", base}
}

// route finds the documented operation of req under one of its path's
// spellings.
func (c *contractChecker) route(req *http.Request) (*routers.Route, map[string]string, error) {
	var firstErr error
	for _, p := range canonicalPaths(req.URL.Path) {
		r := req.Clone(req.Context())
		r.URL.Path, r.URL.RawPath = p, ""
		route, params, err := c.router.FindRoute(r)
		if err == nil {
			return route, params, nil
		}
		if firstErr == nil || errors.Is(err, routers.ErrMethodNotAllowed) {
			firstErr = err
		}
	}
	return nil, nil, firstErr
}

// check validates one exchange: the answer always, the request when it
// was served.
func (c *contractChecker) check(req *http.Request, res response) error {
	route, params, err := c.route(req)
	if err != nil {
		return fmt.Errorf("%s %s is not in docs/openapi.yaml (%v); a test asking outside the document on purpose says so with outsideContract(reason)", req.Method, req.URL.Path, err)
	}
	ctx := context.Background()
	in := &openapi3filter.RequestValidationInput{
		Request: req, PathParams: params, Route: route,
		Options: &openapi3filter.Options{
			AuthenticationFunc:  openapi3filter.NoopAuthenticationFunc,
			ExcludeRequestBody:  true,
			MultiError:          true,
			SkipSettingDefaults: true,
		},
	}
	var problems []string
	if res.status >= 200 && res.status < 300 {
		if err := openapi3filter.ValidateRequest(ctx, in); err != nil {
			problems = append(problems, "the server served a request the document refuses: "+err.Error())
		}
	}
	out := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: in, Status: res.status, Header: res.header,
		Options: &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true},
	}
	out.SetBodyBytes(res.body)
	if err := openapi3filter.ValidateResponse(ctx, out); err != nil {
		problems = append(problems, "the answer is not as documented: "+err.Error())
	}
	if len(problems) > 0 {
		return fmt.Errorf("%s %s (documented as %s %s) answered %d:\n%s\nbody: %.2000s",
			req.Method, req.URL.RequestURI(), route.Method, route.Path, res.status, strings.Join(problems, "\n"), res.body)
	}
	return nil
}
